#!/bin/bash
#SBATCH --cpus-per-gpu=4
#SBATCH --gpus a100:2
#SBATCH --account=bio

#SBATCH --gres=gpu:1
#SBATCH -t 0

#SBATCH -N 1-1
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
