#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --comment="random combo"
## note: #SBATCH -n 999 is not a directive here
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
