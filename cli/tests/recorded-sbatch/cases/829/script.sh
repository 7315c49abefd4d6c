#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --no-requeue
## note: #SBATCH -n 999 is not a directive here
#SBATCH --ntasks-per-node 2
#SBATCH --nodes 2-4
#SBATCH --signal=B:TERM
#SBATCH --time-min=10

set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
