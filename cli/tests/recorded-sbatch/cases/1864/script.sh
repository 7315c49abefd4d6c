#!/bin/bash
#SBATCH -a 0-15:4
#SBATCH --job-name named
#PBS -N pbsjob
#SBATCH --exclusive=user

#SBATCH --gpus-per-node=a100:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
