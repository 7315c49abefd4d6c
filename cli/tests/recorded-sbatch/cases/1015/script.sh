#!/bin/bash

#SBATCH --error=%x.err
#SBATCH --gpus-per-task 1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
