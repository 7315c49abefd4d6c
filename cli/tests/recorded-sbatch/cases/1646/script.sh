#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -N 2
#SBATCH --gpus-per-task=1

#SBATCH --nice=-3
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
