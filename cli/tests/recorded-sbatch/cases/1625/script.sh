#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --cpus-per-task 8
#SBATCH --gres gpu:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
