#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --chdir /scratch/oracle
# SBATCH --mem=1T (not a directive: space)
#SBATCH --account=bio
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
