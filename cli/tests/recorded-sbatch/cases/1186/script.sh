#!/bin/bash
#SBATCH -w n3,n4
# SBATCH --mem=1T (not a directive: space)
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH -d afterok:{P2},afternotok:{P3}

#BSUB -J lsf
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
