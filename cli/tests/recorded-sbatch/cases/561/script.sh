#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -c 64
#SBATCH --nodes 2-4
#SBATCH --exclusive user
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
