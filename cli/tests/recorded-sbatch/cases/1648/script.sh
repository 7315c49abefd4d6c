#!/bin/bash
#SBATCH --exclusive user
#SBATCH --gres=gpu:1g.10gb:2

#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
