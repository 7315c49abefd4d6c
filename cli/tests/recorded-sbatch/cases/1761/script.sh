#!/bin/bash
#SBATCH --qos=normal
#SBATCH --gpus-per-node=a100:1
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
