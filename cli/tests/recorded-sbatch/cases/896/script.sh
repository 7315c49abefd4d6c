#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-gpu=8G
#SBATCH --nice=0
#SBATCH --account bio
#SBATCH -a 2

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
