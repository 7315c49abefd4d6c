#!/bin/bash
#SBATCH --partition=debug
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gpus-per-task=1
#SBATCH -J combo
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
