#!/bin/bash
#SBATCH --gpus-per-task 2
#SBATCH -D/tmp
#SBATCH --gpus-per-node=a100:1
#SBATCH --gpus=a100:2
#SBATCH --nodes=1-3
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
