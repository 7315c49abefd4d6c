#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -d "afterok:{P2},afternotok:{P3}"
#SBATCH -p "debug,batch"
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
