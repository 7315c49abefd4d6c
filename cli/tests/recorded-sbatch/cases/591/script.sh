#!/bin/bash
#SBATCH --mem 2048K
#SBATCH -N3
#SBATCH -Ga100:5
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
