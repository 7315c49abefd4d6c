#!/bin/bash
#SBATCH --export NONE
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mail-user a@b.c
#SBATCH --kill-on-invalid-dep yes
#SBATCH -x n1
#SBATCH -A physics
#SBATCH --mem-per-gpu=8G
#SBATCH -w n1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
