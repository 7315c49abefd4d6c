#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --export="ALL,A=1,B=2"

#SBATCH --gpus-per-node=2
#SBATCH --cpus-per-task 8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
