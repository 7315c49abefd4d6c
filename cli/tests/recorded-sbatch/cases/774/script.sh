#!/bin/bash
#SBATCH --export "ALL,A=1,B=2"
#SBATCH --gpus-per-task=a100:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
