#!/bin/bash
#SBATCH -Jcombo
#SBATCH --gpus-per-task=a100:1
#SBATCH --kill-on-invalid-dep=yes

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
