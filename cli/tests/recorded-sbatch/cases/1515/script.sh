#!/bin/bash
#SBATCH --gres=gpu:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
