#!/bin/bash
#SBATCH --nice -3
#SBATCH --gpus-per-node 1g.10gb:2
#SBATCH --gpus=1g.10gb:3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
