#!/bin/bash

#SBATCH --gpus-per-node=1g.10gb:2
#SBATCH --wckey k1
#SBATCH --export=NONE
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
