#!/bin/bash
#SBATCH --gres gpu:1
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gpus=1g.10gb:3

#SBATCH -D /tmp
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
