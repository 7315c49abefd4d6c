#!/bin/bash
#SBATCH --cpus-per-gpu=4
#SBATCH -e e-%j.txt
#SBATCH -i in-%j.txt
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
