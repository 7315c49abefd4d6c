#!/bin/bash
#SBATCH --time-min=10
# SBATCH --mem=1T (not a directive: space)

#SBATCH --tim=15
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
