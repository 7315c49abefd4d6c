#!/bin/bash
#SBATCH -t 1-0
#SBATCH --exclude=n[3-4]
#SBATCH --array 1-3%0
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
