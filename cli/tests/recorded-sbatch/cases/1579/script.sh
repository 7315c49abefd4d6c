#!/bin/bash
#SBATCH --deadline=2031-01-01T00:00:00
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem-per-cpu=256
#SBATCH --oversubscribe
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
