#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH --job-name=named
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
