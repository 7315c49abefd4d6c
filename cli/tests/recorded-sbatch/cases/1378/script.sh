#!/bin/bash
#SBATCH -x n1
#SBATCH --mem-per-gpu=8G
#SBATCH --open-mode=append
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
