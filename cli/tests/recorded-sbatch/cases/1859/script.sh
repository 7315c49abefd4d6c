#!/bin/bash
#SBATCH --cpus-per-task=8

#SBATCH -N 2
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH --exclusive
#SBATCH --gpus-per-task=2
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
