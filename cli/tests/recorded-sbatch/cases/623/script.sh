#!/bin/bash
#SBATCH --mem-per-gpu 1024
## note: #SBATCH -n 999 is not a directive here

#SBATCH --gpus=a100:2
## note: #SBATCH -n 999 is not a directive here
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
