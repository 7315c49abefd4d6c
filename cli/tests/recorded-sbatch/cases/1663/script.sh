#!/bin/bash

#SBATCH --gpus=a100:2
#SBATCH --cpus-per-task 8
#SBATCH --exclusive=user
# SBATCH --mem=1T (not a directive: space)

#SBATCH -dafterok:{P5}_2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
