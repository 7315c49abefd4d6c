#!/bin/bash
#SBATCH -t 1-0
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gres=gpu:a100
## note: #SBATCH -n 999 is not a directive here

#SBATCH --gpus-per-task=2
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
