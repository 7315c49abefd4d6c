#!/bin/bash
#SBATCH -e e-%j.txt
#SBATCH --time-min 1:00:00
#SBATCH -H
#SBATCH --gpus-per-node=a100:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
