#!/bin/bash

#SBATCH -s
#SBATCH --cpus-per-gpu 4
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gpus-per-task=a100:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
