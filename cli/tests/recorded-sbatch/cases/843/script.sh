#!/bin/bash

#SBATCH --exclude n[3-4]
#SBATCH --partition=debug
#SBATCH -s
#SBATCH --output=%%-%j
#SBATCH -J "two words"
#SBATCH --job=abbr
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
