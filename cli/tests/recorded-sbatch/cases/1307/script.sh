#!/bin/bash
#SBATCH -J a,b
#SBATCH --deadline=2031-01-01T00:00:00
# SBATCH --mem=1T (not a directive: space)
#SBATCH --exclude n[3-4]
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
