#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -N 1-1
#SBATCH -x n1
#SBATCH --cpus-per-gpu=4

#SBATCH -pnosuch
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
