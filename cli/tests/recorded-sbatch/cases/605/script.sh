#!/bin/bash
#SBATCH --gpus-per-node 1g.10gb:2
#SBATCH -c 64
#SBATCH --mem=4G
#SBATCH --wckey=k1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
