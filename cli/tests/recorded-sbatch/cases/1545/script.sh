#!/bin/bash
#SBATCH --gpus=a100:2
#SBATCH --open-mode=truncate
#SBATCH --exclude=n[3-4]
#SBATCH --comment "it's # here"
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
