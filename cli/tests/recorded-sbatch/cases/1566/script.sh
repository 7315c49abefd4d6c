#!/bin/bash
#SBATCH --cpus-per-gpu=4

## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus-per-task=2
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
