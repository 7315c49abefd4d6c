#!/bin/bash
#SBATCH --gres gpu:a100:2

# SBATCH --mem=1T (not a directive: space)
#SBATCH -N 1-1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
