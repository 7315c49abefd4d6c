#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH -e e-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
