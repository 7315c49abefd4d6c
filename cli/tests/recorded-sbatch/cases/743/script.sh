#!/bin/bash
#SBATCH -a2
#SBATCH --mem-per-gpu=1024
#SBATCH -A physics
# SBATCH --mem=1T (not a directive: space)
#SBATCH --qos normal
#SBATCH --mem=2048K
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
