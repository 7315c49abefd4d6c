#!/bin/bash
#SBATCH --mem-per-gpu=1024
#SBATCH --ntasks-per-n=2
#SBATCH --mem=512
#SBATCH --gpus a100:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
