#!/bin/bash
# SBATCH --mem=1T (not a directive: space)

# SBATCH --mem=1T (not a directive: space)
#SBATCH --gpus-per-node=a100:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
