#!/bin/bash

#SBATCH -t 1-0
#PBS -o pbs.out
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
