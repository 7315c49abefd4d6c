#!/bin/bash
#SBATCH -q high
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH --partition debug
#SBATCH --tmp 1G
#SBATCH --gpus-per-task=1

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
