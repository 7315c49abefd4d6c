#!/bin/bash
#SBATCH -s
#SBATCH -J combo
#SBATCH --signal=B:TERM
# SBATCH --mem=1T (not a directive: space)
#SBATCH -a 0-15:4
#SBATCH --mem-per-gpu 1024
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
