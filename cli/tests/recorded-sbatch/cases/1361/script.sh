#!/bin/bash
#SBATCH --gpus-per-node=2
#SBATCH --mem 1024MB
#SBATCH --kill-on-invalid-dep=yes
#SBATCH --signal USR1@60

#SBATCH --gres=gpu:a100
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
