#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --reservation nosuchresv
#SBATCH -N 4
#PBS -N pbsjob
# SBATCH --mem=1T (not a directive: space)
#SBATCH --export ALL
#SBATCH -H
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
