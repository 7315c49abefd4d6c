#!/bin/bash

#SBATCH -J "two words"
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem-per-gpu 8G
#SBATCH --deadline=2031-01-01T00:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
