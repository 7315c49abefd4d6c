#!/bin/bash
#SBATCH --mem-per-cpu=2048K
#SBATCH -N1
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gpus=1
#SBATCH --comment "random combo"
#SBATCH --partition debug
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
