#!/bin/bash
#SBATCH --gpus=1
#SBATCH --cpus-per-gpu=2
# SBATCH --mem=1T (not a directive: space)
#SBATCH -J"two words"
#SBATCH -a 2
#SBATCH -o/dev/null
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
