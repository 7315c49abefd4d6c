#!/bin/bash


#SBATCH --nodes=2-4
#SBATCH --mem-per-gpu=8G
#SBATCH -D /tmp
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
