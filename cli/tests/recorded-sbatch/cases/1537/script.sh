#!/bin/bash
#SBATCH --begin 2030-06-01T12:00:00
#SBATCH -o/dev/null
#SBATCH -A physics
#SBATCH -w n1
#SBATCH -s
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here

module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
