#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --dependency=singleton
#SBATCH --open-mode=append
#SBATCH --job-name=named
#SBATCH --signal=B:TERM
#SBATCH --output o-%j.out
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
