#!/bin/bash
#SBATCH -pbatch
## note: #SBATCH -n 999 is not a directive here
#SBATCH --exclude=n[3-4]
#SBATCH -N 2
#SBATCH --wckey=k1
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
