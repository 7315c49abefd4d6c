#!/bin/bash
#SBATCH -c2

#SBATCH --comment "random combo"
#SBATCH -J "two words"
#SBATCH --gpus=1g.10gb:3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
