#!/bin/bash
#SBATCH --array 0-99%5
#SBATCH -n 3
# SBATCH --mem=1T (not a directive: space)

#SBATCH -wn3,n4
#SBATCH --exclusive user
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
