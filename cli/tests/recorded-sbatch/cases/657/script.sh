#!/bin/bash
#SBATCH --mail-user a@b.c
#SBATCH --output=%x-%j.log
#SBATCH --gpus-per-node 1g.10gb:2
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
