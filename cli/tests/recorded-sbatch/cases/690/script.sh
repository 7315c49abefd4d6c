#!/bin/bash
#SBATCH --array=0-15
#SBATCH --reservation=nosuchresv
#SBATCH -e e-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
