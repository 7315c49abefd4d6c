#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH -qhigh
#SBATCH --cpus-per-task=8
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
