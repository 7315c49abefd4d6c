#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem=0
# SBATCH --mem=1T (not a directive: space)
#SBATCH --requeue

#PBS -o pbs.out
#SBATCH -N 2
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
