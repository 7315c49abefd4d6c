#!/bin/bash
#SBATCH -o%A_%a.out
#SBATCH --error=%x.err
#SBATCH --gres=gpu:1g.10gb:2

#SBATCH --gpus-per-task 1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
