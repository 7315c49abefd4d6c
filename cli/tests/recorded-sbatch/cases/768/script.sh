#!/bin/bash
#SBATCH -a 1,3,5
#SBATCH --begin=2030-06-01T12:00

#SBATCH --mem-per-gpu=1024
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gpus-per-task=1
#SBATCH -N 1

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
