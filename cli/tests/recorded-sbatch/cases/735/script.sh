#!/bin/bash
#SBATCH --deadline 2031-01-01T00:00:00
#SBATCH --signal USR1@60
#SBATCH -x n1
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
