#!/bin/bash
#SBATCH -w n3,n4
#SBATCH --mem-per-gpu=1024
#SBATCH --mem-per-cpu 256
## note: #SBATCH -n 999 is not a directive here
#SBATCH --deadline=2031-01-01T00:00:00
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
