#!/bin/bash

#BSUB -n 3
#SBATCH --time-min=10
#SBATCH --nice 5
#SBATCH --mem-per-cpu 1G
## note: #SBATCH -n 999 is not a directive here
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
