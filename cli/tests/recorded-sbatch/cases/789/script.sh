#!/bin/bash
#SBATCH --export ALL
#SBATCH --signal B:TERM
#SBATCH --cpus-per-gpu=2
## note: #SBATCH -n 999 is not a directive here
#SBATCH -s
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
