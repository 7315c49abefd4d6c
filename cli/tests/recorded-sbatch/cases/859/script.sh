#!/bin/bash
#SBATCH --gpus-per-task 1
#SBATCH --time-min 45
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
