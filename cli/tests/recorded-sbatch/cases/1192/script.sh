#!/bin/bash
#SBATCH --gpus-per-task=2
#SBATCH --cpus-per-gpu 4
#SBATCH --time-min 45
#SBATCH --signal USR1@60

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
