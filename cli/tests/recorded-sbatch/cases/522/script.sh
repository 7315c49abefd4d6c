#!/bin/bash
#SBATCH --job-name named
#SBATCH -e e-%j.txt

#SBATCH --mem=4G
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
