#!/bin/bash
#SBATCH --export NONE
#SBATCH --gpus-per-node=1g.10gb:2
#SBATCH -x n1
#SBATCH --no-requeue
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
