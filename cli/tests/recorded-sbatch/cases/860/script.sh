#!/bin/bash
#SBATCH --gres=gpu:1g.10gb:2
#SBATCH -J "two words"
#SBATCH -b 2031-02-03
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
