#!/bin/bash
#SBATCH --time-min 10
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
#SBATCH --export ALL
#SBATCH --chdir=/scratch/oracle

#SBATCH --mem-per-cpu 256
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
