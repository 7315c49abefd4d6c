#!/bin/bash
#SBATCH -e e-%j.txt
#SBATCH -b 2031-02-03
#SBATCH --mail-user a@b.c
#SBATCH --ntasks-per-node 2
#SBATCH --gpus-per-task=a100:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
