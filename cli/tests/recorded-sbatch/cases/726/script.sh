#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --error %x.err
#SBATCH -c 64
# SBATCH --mem=1T (not a directive: space)
#SBATCH -a"1,3,5"
#SBATCH --mail-type=END
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
