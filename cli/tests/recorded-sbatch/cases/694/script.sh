#!/bin/bash
#SBATCH --exclude=n[3-4]

#SBATCH --exclusive
#SBATCH --mail-user=a@b.c
#SBATCH -w n1

set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
