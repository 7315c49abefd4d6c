#!/bin/bash
#SBATCH --mincpus 8
#SBATCH --time-min=45
## note: #SBATCH -n 999 is not a directive here
#SBATCH --account=bio
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem-per-gpu=8G
#SBATCH --exclusive
## note: #SBATCH -n 999 is not a directive here
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
