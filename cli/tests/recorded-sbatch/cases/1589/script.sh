#!/bin/bash
#SBATCH --mem=512


#SBATCH -N 2
#SBATCH --overcommit
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
