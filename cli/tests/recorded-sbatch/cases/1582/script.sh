#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH --cpus-per-gpu 4
## note: #SBATCH -n 999 is not a directive here
#SBATCH -e e-%j.txt
#SBATCH --mem 1024MB
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
