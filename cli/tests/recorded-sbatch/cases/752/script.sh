#!/bin/bash
#SBATCH --mem-per-cpu=1G
#SBATCH --nodes=1-3
#SBATCH --time 2:00:00
#SBATCH --gres=gpu:a100:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
