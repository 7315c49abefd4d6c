#!/bin/bash
#SBATCH -J "two words"
#SBATCH --ntasks=65
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus=a100:2
# SBATCH --mem=1T (not a directive: space)
#SBATCH --cpus-per-gpu 4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
