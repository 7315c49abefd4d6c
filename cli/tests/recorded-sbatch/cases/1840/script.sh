#!/bin/bash
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-gpu=8G
#SBATCH --signal=USR1@60
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
