#!/bin/bash
#SBATCH --gpus 1g.10gb:3
#SBATCH -J combo
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
