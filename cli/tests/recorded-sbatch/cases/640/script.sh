#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --wckey=k1
#SBATCH -c 64
#SBATCH --gpus-per-task=1
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
