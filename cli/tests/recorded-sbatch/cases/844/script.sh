#!/bin/bash

#SBATCH --array=0-15
#SBATCH --gpus-per-task a100:1
#SBATCH --requeue
#SBATCH --mem-per-cpu 2048K
#SBATCH --kill-on-invalid-dep=yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
