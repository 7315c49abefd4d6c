#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --time-min=10
#SBATCH -J "two words"
#SBATCH --signal=B:TERM
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
