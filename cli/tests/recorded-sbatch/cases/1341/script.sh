#!/bin/bash
#SBATCH --chdir=/scratch/oracle
#SBATCH --mail-user=a@b.c
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gres gpu:1
# SBATCH --mem=1T (not a directive: space)
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
