#!/bin/bash
#SBATCH -a 1,3,5
#SBATCH --gres gpu:2
#SBATCH --ntasks=65
# SBATCH --mem=1T (not a directive: space)
#SBATCH -o %A_%a.out
#SBATCH --mem-per-cpu=2048K
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
