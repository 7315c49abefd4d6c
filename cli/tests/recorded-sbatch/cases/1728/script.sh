#!/bin/bash

#SBATCH --exclusive
#SBATCH -t45:30
#SBATCH --open-mode=append
#SBATCH --job=abbr

set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
