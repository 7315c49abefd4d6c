#!/bin/bash
#SBATCH --time-min 10
#SBATCH --gpus=1g.10gb:3
#SBATCH --mail-user a@b.c

#SBATCH --gpus-per-task=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
