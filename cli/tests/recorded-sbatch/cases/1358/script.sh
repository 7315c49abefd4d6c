#!/bin/bash
#SBATCH --output=%%-%j
#SBATCH --ntasks-per-node=1
# SBATCH --mem=1T (not a directive: space)
#SBATCH --nodelist=n[1-2]
#SBATCH -b2031-02-03
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
