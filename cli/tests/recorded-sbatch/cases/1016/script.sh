#!/bin/bash
#SBATCH --signal=B:TERM
## note: #SBATCH -n 999 is not a directive here
#SBATCH --cpus-per-gpu 4
#SBATCH -J a,b
#SBATCH --exclusive user
# SBATCH --mem=1T (not a directive: space)
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
