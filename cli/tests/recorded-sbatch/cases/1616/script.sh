#!/bin/bash
#SBATCH --export=COMBO=1
#SBATCH --gpus-per-task 1

srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
