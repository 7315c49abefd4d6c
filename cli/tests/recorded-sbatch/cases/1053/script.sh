#!/bin/bash

#SBATCH --cpus-per-gpu=4
#SBATCH -c 2
#SBATCH -q high
# SBATCH --mem=1T (not a directive: space)
#SBATCH --account=bio

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
