#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -c 2
#SBATCH --mem-per-cpu=1G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
