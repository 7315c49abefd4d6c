#!/bin/bash
#SBATCH --mem-per-gpu 1024
# SBATCH --mem=1T (not a directive: space)
#SBATCH --array 0-99%5
#SBATCH --nice=5
#SBATCH -i in-%j.txt

#SBATCH -c 2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
