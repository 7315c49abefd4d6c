#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks=65
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
