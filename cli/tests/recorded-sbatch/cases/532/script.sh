#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -H
#SBATCH --array 0-15
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
