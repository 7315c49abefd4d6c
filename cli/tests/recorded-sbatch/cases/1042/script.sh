#!/bin/bash
#SBATCH -b2031-02-03
#SBATCH --mincpus=8
#SBATCH -J combo
#SBATCH --open-mode=append
# SBATCH --mem=1T (not a directive: space)
#SBATCH --cpus-per-task 8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
