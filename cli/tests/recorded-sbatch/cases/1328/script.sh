#!/bin/bash
#SBATCH -x n1
#SBATCH --gpus-per-task 1
#SBATCH --job-name named
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
