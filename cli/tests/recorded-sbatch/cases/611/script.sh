#!/bin/bash
#SBATCH -pbatch

#SBATCH --export NONE
#SBATCH --mincpus=8
#SBATCH --gpus-per-node=a100:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
