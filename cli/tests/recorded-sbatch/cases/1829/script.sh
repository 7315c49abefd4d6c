#!/bin/bash
#SBATCH --ntasks-per-node 2
#SBATCH -e e-%j.txt
#SBATCH -t INFINITE

## note: #SBATCH -n 999 is not a directive here
#SBATCH --no-requeue
#SBATCH --gpus-per-task=2
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
