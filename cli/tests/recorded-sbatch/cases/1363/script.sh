#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --signal=B:TERM
#SBATCH --account=bio
#SBATCH --mincpus=8
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --exclude=n[3-4]
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
