#!/bin/bash
#SBATCH --mincpus 8
# SBATCH --mem=1T (not a directive: space)
#SBATCH --open-mode append
#SBATCH --mem 2048K
#SBATCH -pdebug,batch
#SBATCH --exclusive=user
#SBATCH --part=debug
#SBATCH --mem-per-gpu=1024
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
