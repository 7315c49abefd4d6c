#!/bin/bash

#SBATCH --output %x-%j.log
#SBATCH --gres gpu:1
#SBATCH --gpus-per-node=a100:1
#SBATCH --ntasks-per-node 2
#SBATCH -p debug,batch
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
