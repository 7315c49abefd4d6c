#!/bin/bash
#SBATCH -ee-%j.txt

#SBATCH --mem=1024MB
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gres=gpu:1
# SBATCH --mem=1T (not a directive: space)
#SBATCH -d afterany:{P5}
# SBATCH --mem=1T (not a directive: space)
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
