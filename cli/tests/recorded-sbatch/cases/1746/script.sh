#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem-per-gpu 8G
# SBATCH --mem=1T (not a directive: space)
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
