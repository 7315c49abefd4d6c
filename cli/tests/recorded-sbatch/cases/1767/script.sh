#!/bin/bash
#SBATCH --gres=gpu:a100:2
#SBATCH --gpus-per-node 2
#SBATCH --deadline=2031-01-01T00:00:00
#PBS -o pbs.out
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
