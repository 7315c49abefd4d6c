#!/bin/bash
#SBATCH --output=%x-%j.log
#SBATCH --mem 512
#SBATCH --gpus-per-node=2
# SBATCH --mem=1T (not a directive: space)
#SBATCH -t 0:59
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
