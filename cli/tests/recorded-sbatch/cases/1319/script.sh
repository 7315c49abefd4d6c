#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -s
#SBATCH -Ga100:5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
