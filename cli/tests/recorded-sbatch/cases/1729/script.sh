#!/bin/bash
#SBATCH -x n1
#SBATCH --open-mode=append
#SBATCH -H
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
