#!/bin/bash
#SBATCH --mem-per-gpu=1024
#SBATCH --account=bio
#SBATCH -N1-1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
