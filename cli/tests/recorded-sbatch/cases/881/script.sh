#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gres=gpu:1g.10gb:2
#SBATCH --wckey=k1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
