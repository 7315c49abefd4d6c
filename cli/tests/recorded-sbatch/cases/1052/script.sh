#!/bin/bash

#SBATCH -G2
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-cpu 1G

#SBATCH --deadline 2031-01-01T00:00:00
#SBATCH -s
#SBATCH --exclude=n[3-4]
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
