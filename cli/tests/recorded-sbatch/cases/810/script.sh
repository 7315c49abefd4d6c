#!/bin/bash
#SBATCH --part=debug
#SBATCH --begin 2030-06-01T12:00
#SBATCH -o %A_%a.out
#SBATCH --gpus-per-task=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
