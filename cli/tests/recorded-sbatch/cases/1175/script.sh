#!/bin/bash
#SBATCH --signal B:TERM
#SBATCH --oversubscribe
#SBATCH --open-mode=append
#SBATCH --time-min 1:00:00
#SBATCH --gres=gpu:a100:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
