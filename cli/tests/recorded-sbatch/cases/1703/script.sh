#!/bin/bash
#SBATCH --chdir rel
#SBATCH -N 1-1
#SBATCH --mem-per-gpu=8G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
