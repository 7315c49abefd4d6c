#!/bin/bash
#SBATCH -o %A_%a.out
#SBATCH --gpus-per-task a100:1

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
