#!/bin/bash

# SBATCH --mem=1T (not a directive: space)
#SBATCH -t 150
#SBATCH --account=bio

# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
