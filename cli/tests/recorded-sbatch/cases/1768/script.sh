#!/bin/bash
#SBATCH --ntasks-per-node 2
#SBATCH --cpus-per-gpu=2
#SBATCH --mem-per-cpu=256
#SBATCH --signal B:TERM
## note: #SBATCH -n 999 is not a directive here
#SBATCH --no-requeue

set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
