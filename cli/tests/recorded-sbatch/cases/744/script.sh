#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -G a100:5

#SBATCH --gres=gpu:1
#SBATCH --mem=600G
#SBATCH -xn1

srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
