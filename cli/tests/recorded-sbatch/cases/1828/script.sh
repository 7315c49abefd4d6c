#!/bin/bash
#SBATCH -H
#SBATCH --exclusive user
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem-per-gpu 8G
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
