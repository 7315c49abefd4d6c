#!/bin/bash
#SBATCH --export=COMBO=1
#SBATCH --output=%x-%j.log
## note: #SBATCH -n 999 is not a directive here
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
