#!/bin/bash
#SBATCH --gpus-per-task a100:1
#SBATCH --error=%x.err
#SBATCH -a "1,3,5"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
