#!/bin/bash
#SBATCH -e e-%j.txt
#SBATCH -d afterok:{P5}_2
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
