#!/bin/bash
#SBATCH -D /tmp
#SBATCH --exclusive=user
#SBATCH --gpus=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
