#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem-per-gpu=8G
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH --nice=0
## note: #SBATCH -n 999 is not a directive here
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
