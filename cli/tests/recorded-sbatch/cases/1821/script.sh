#!/bin/bash
#SBATCH --partition debug

# SBATCH --mem=1T (not a directive: space)

#SBATCH --array 0-99%5
#SBATCH --account=bio
#SBATCH --open-mode=append
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
