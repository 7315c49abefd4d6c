#!/bin/bash
#SBATCH --export COMBO=1
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
