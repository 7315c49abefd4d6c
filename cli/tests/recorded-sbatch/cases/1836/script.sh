#!/bin/bash
#SBATCH --open-mode=append
#SBATCH --array=0-3,7
#SBATCH --time-min=1:00:00
#SBATCH --cpus-per-gpu=4
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
