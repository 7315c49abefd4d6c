#!/bin/bash
#SBATCH --gpus-per-node=a100:1

#SBATCH --wckey k1
#SBATCH --ntasks-per-node=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
