#!/bin/bash
#SBATCH --exclusive
#SBATCH -p batch
#SBATCH --time-min 10
#SBATCH --gpus-per-task 1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
