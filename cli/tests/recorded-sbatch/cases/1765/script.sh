#!/bin/bash
#SBATCH --gpus-per-task=a100:1
#SBATCH --error=%x.err
#SBATCH --open-mode=append

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
