#!/bin/bash
#SBATCH --time-min 45
## note: #SBATCH -n 999 is not a directive here
#SBATCH --begin=2030-06-01T12:00:00
#SBATCH -t UNLIMITED
#SBATCH -n4
# SBATCH --mem=1T (not a directive: space)
#SBATCH --dependency=after:{P4}+3
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
