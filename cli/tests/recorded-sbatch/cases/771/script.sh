#!/bin/bash
#SBATCH --gpus=a100:2
#SBATCH -A physics
#SBATCH -s
#SBATCH --exclusive=user

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
