#!/bin/bash
#SBATCH --qos normal
#SBATCH -p batch
#SBATCH -J combo
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gpus=1g.10gb:3
#SBATCH --signal B:TERM
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
