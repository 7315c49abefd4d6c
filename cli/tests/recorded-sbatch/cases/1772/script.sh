#!/bin/bash
#SBATCH --no-requeue
#SBATCH -e e-%j.txt
#SBATCH --export=NONE

#SBATCH --gpus-per-task 1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
