#!/bin/bash
#SBATCH --job-name=named

#SBATCH -N 1
#SBATCH --comment="random combo"
#SBATCH --gpus-per-task 1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
