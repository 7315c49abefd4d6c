#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mincpus=8
#SBATCH --mem-per-cpu=1G
#SBATCH -ee-%j.txt
#SBATCH --ntasks-per-node=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
