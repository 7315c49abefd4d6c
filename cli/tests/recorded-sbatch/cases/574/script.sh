#!/bin/bash
#SBATCH --array=0-15
#SBATCH -N 3
#SBATCH --mem-per-cpu=256
#SBATCH --gpus=a100:2
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
