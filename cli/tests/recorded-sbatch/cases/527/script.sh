#!/bin/bash
#SBATCH --mem-per-cpu=1G
#SBATCH --gres=gpu:1g.10gb:2

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
