#!/bin/bash
#SBATCH --reservation=nosuchresv
#SBATCH -i in-%j.txt
#SBATCH --comment "random combo"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
