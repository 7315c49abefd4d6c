#!/bin/bash
#SBATCH --nodes=1-3
#SBATCH --tmp 1G
#SBATCH --exclusive user
#PBS -q debug
#SBATCH --gpus-per-task=1
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem 512
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
