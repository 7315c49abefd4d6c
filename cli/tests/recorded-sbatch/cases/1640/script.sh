#!/bin/bash
#SBATCH --ntasks 16
#SBATCH -a 1,3,5
# SBATCH --mem=1T (not a directive: space)
#SBATCH --exclusive=user
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
