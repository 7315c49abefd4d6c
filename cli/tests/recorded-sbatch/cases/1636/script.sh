#!/bin/bash
#SBATCH --gpus=1g.10gb:3
#SBATCH --dependency after:{P4}+3
#SBATCH -pbatch,debug
#SBATCH -t 30:15
#SBATCH --cpus-per-task=8
#SBATCH --gres=gpu:1
#SBATCH -b 2031-02-03
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
