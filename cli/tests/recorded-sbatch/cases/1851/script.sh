#!/bin/bash
#SBATCH --account=bio
## note: #SBATCH -n 999 is not a directive here
#SBATCH -D /tmp
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
