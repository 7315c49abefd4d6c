#!/bin/bash
#SBATCH --mail-user a@b.c
#SBATCH --array=1-3%0
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
