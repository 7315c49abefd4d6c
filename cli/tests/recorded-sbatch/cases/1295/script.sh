#!/bin/bash
#SBATCH --mincpus 8
## note: #SBATCH -n 999 is not a directive here
#SBATCH -t 1-0
#SBATCH --mem 16g
#SBATCH --gres=gpu:1
#SBATCH -s
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
