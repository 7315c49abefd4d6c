#!/bin/bash
#SBATCH -n1
#SBATCH --gpus-per-task 1

#SBATCH -o %A_%a.out
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
