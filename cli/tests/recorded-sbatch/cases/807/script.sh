#!/bin/bash
#SBATCH --mem-per-cpu=256
#SBATCH --gpus=1

#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH -iin-%j.txt

set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
