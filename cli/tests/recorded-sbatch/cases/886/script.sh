#!/bin/bash
#SBATCH --chdir /scratch/oracle
#SBATCH --mincpus 8
#SBATCH --export=NONE
#SBATCH -t 45:30
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
