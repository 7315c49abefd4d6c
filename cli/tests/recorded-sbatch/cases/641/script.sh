#!/bin/bash
#SBATCH -c 64
#SBATCH -H
#SBATCH --ntasks-per-node=2
#SBATCH --gres gpu:1g.10gb:2
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
