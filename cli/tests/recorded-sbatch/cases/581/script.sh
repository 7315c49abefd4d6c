#!/bin/bash
#SBATCH --export NONE
#SBATCH --gres=gpu:a100:2
#SBATCH --nice -3

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
