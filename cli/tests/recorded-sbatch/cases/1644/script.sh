#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem-per-cpu=2048K
#SBATCH --ntasks-per-node 2
#SBATCH --gres gpu:1
#SBATCH -G2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
