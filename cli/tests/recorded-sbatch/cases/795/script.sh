#!/bin/bash
#SBATCH --gpus-per-task 1
#SBATCH -a "1,3,5"
## note: #SBATCH -n 999 is not a directive here
#SBATCH -s
#SBATCH -xn1
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
