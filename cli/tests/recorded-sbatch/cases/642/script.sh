#!/bin/bash
#SBATCH -c 64
#SBATCH -A physics
#SBATCH --cpus-per-gpu=4
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
