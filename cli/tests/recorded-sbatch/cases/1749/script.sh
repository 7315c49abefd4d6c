#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here

#SBATCH --time-min=45
#SBATCH -x n1
#SBATCH --export "ALL,A=1,B=2"
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
