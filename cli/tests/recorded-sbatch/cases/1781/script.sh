#!/bin/bash
#SBATCH -t UNLIMITED
## note: #SBATCH -n 999 is not a directive here
#SBATCH -s
#SBATCH --time-min 45
#SBATCH --exclusive=user
#SBATCH -N 2

srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
