#!/bin/bash
#SBATCH --gpus-per-task=2
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
#SBATCH --cpus-per-gpu=2
#SBATCH --wckey=k1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
