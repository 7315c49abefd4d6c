#!/bin/bash
#SBATCH --gpus-per-task=a100:1

#SBATCH -J a,b
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
