#!/bin/bash
#SBATCH -q high
#SBATCH -xn1
#SBATCH -a1,3,5
#SBATCH --gres=gpu:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
