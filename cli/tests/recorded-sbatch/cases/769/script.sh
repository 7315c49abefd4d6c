#!/bin/bash
#SBATCH --mem=600G

# SBATCH --mem=1T (not a directive: space)
#SBATCH --array 0-99%5
#SBATCH -J"two words"
#SBATCH --signal=USR1@60
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
