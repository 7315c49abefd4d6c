#!/bin/bash
#SBATCH -c64
# SBATCH --mem=1T (not a directive: space)
#SBATCH --open-mode=append
#SBATCH --gres=gpu:1g.10gb:2
#SBATCH --nice=5
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
