#!/bin/bash
#SBATCH --mail-user=a@b.c
#PBS -l walltime=00:30:00
#SBATCH --time-min=45
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH --begin=2030-06-01T12:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
