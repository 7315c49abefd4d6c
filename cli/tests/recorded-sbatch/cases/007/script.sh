#!/bin/bash
#SBATCH --gpus=a100:1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
