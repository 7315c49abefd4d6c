#!/bin/bash
#SBATCH -q high
#SBATCH --gpus-per-node=1g.10gb:2

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
