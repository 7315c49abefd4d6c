#!/bin/bash

#SBATCH -xn1
#SBATCH --gpus 1g.10gb:3
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
