#!/bin/bash
#SBATCH --begin=2030-06-01T12:00:00
#SBATCH --ntasks 16
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gres=gpu:a100:2

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
