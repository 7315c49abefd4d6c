#!/bin/bash
#SBATCH -o out-%4j.txt
# SBATCH --mem=1T (not a directive: space)
#SBATCH --time=30
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
