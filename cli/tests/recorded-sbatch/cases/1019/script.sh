#!/bin/bash
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH --requeue
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mincpus 8
#SBATCH -J "two words"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
