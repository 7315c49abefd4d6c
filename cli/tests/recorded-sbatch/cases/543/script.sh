#!/bin/bash
#SBATCH --mem 2048K
## note: #SBATCH -n 999 is not a directive here
#SBATCH --exclusive=user
#SBATCH -t 150
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
