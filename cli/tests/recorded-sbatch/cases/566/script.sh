#!/bin/bash
#SBATCH --array=0-99%5

#SBATCH -n 8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
