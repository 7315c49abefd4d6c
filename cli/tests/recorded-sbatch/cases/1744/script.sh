#!/bin/bash
#SBATCH --gpus-per-task=1
#SBATCH --mem-per-gpu=1024
#SBATCH --cpus-per-task=8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
