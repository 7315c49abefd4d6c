#!/bin/bash
#SBATCH --signal=B:TERM
#SBATCH --export "ALL,A=1,B=2"
#SBATCH --gpus-per-task=a100:1
#SBATCH --gpus 1

## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
