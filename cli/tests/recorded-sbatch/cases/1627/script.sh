#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -t30:15
#SBATCH --begin=2030-06-01T12:00:00
#SBATCH --time-min=10

set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
