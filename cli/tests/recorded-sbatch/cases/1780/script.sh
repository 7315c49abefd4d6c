#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --open-mode append
#SBATCH --wckey k1
#SBATCH -A physics
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
