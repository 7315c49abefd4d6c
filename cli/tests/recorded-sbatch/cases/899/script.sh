#!/bin/bash


#SBATCH --mem-per-cpu 2048K
#SBATCH -n 3
#SBATCH --mincpus=8

#SBATCH --gpus-per-node=a100:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
