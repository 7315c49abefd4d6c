#!/bin/bash
#SBATCH --mem=512

#SBATCH --ntasks-per-node 2
#SBATCH --gres=gpu:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
