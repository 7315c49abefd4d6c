#!/bin/bash
#SBATCH --tmp 1G
#SBATCH --deadline 2031-01-01T00:00:00
#SBATCH -t INFINITE
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus-per-task=2
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
