#!/bin/bash
#SBATCH --gpus a100:2

#SBATCH -a"1,3,5"
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
