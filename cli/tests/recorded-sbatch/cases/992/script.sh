#!/bin/bash
#SBATCH --mem-per-gpu=1024
#SBATCH -H
#SBATCH --ntasks 16
#SBATCH --array=0-99%5
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
