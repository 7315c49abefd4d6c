#!/bin/bash
#SBATCH --account=bio
#SBATCH --no-requeue
#SBATCH --array 0-15

#SBATCH --deadline=2031-01-01T00:00:00
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
