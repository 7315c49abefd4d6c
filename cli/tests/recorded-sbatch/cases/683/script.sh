#!/bin/bash

#SBATCH --mem-per-gpu 8G
#SBATCH --gres=gpu:a100:2
#SBATCH --job-name=named
#SBATCH --cpus-per-gpu=2
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
