#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --begin=2030-06-01T12:00:00

#PBS -j oe
#SBATCH --chdir /scratch/oracle
#SBATCH -a "1,3,5"
#SBATCH -xn1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
