#!/bin/bash
#SBATCH --output=%%-%j
# SBATCH --mem=1T (not a directive: space)
#SBATCH --chdir /scratch/oracle
#SBATCH --wckey k1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
