#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --chdir=/scratch/oracle
#SBATCH --ntasks-per-node 2

## note: #SBATCH -n 999 is not a directive here
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
