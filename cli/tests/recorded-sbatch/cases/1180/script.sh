#!/bin/bash

#SBATCH --gpus-per-node=2
#SBATCH --time-min=45
#SBATCH --error=%x.err
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gres=gpu:a100
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
