#!/bin/bash
#SBATCH -a0-15:4

#SBATCH -i in-%j.txt
#SBATCH --cpus-per-gpu=4
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
