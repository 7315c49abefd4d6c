#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -p nosuch
#SBATCH --export=ALL

#SBATCH -n 4
#SBATCH --oversubscribe
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
