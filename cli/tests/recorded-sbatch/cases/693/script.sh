#!/bin/bash
#SBATCH --export COMBO=1
#SBATCH --time-min=10

#SBATCH --no-requeue
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
