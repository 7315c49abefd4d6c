#!/bin/bash
#SBATCH -A physics
#PBS -J 0-3
#SBATCH -s
#SBATCH --gpus-per-node 1g.10gb:2
#SBATCH -q high
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
