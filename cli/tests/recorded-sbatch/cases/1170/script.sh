#!/bin/bash
#SBATCH --time-min=10
#SBATCH --export=NONE
#SBATCH -Aphysics
# SBATCH --mem=1T (not a directive: space)
#SBATCH --array "0-3,7"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
