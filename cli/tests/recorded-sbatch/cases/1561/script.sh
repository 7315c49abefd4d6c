#!/bin/bash
#SBATCH --array=0-99%5
#SBATCH --cpus-per-gpu=2
#SBATCH -t 60:00
#SBATCH --begin 2030-06-01T12:00
# SBATCH --mem=1T (not a directive: space)
#SBATCH --exclusive


set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
