#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -ee-%j.txt
#SBATCH --time-min=45
#SBATCH --signal USR1@60
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
