#!/bin/bash
#SBATCH --deadline 2031-01-01T00:00:00
#SBATCH -a 1,3,5
# SBATCH --mem=1T (not a directive: space)
#SBATCH -q high
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
