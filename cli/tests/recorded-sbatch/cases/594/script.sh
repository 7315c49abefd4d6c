#!/bin/bash
#SBATCH --time-min=10
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gpus a100:2
#SBATCH -n 8
#SBATCH --begin 2030-06-01T12:00:00
#SBATCH --export NONE
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
