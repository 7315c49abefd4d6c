#!/bin/bash
#SBATCH --requeue
#SBATCH --signal=USR1@60
#SBATCH -t30:15
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
