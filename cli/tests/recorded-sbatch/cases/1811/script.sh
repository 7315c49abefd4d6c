#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#PBS -l walltime=00:30:00
#SBATCH --gpus-per-task=1
#SBATCH --wckey=k1
#SBATCH --open-mode=append
#SBATCH -Ga100:5

srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
