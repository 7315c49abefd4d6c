#!/bin/bash
#SBATCH -o /dev/null
#SBATCH --mem-per-gpu=8G
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
