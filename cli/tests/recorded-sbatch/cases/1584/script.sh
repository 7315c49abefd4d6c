#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --ntasks-per-n 2
#SBATCH -J "two words"
#SBATCH --requeue

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
