#!/bin/bash
#SBATCH -N 1

#SBATCH --time-min 1:00:00
#SBATCH --oversubscribe
#SBATCH -o /dev/null
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
