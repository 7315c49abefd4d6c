#!/bin/bash
#SBATCH --mem=2048K
## note: #SBATCH -n 999 is not a directive here
#SBATCH --exclusive=user
#SBATCH --gres=gpu:a100:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
