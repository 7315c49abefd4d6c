#!/bin/bash
#SBATCH --mem 0
# SBATCH --mem=1T (not a directive: space)
#SBATCH -N 1-1
#SBATCH -s
## note: #SBATCH -n 999 is not a directive here
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
