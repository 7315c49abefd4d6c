#!/bin/bash

#SBATCH --cpus-per-task=8
#SBATCH -x n1
#SBATCH -w "n3,n4"
#SBATCH --exclusive
#SBATCH --gpus-per-node=a100:1
## note: #SBATCH -n 999 is not a directive here
#SBATCH --open-mode=truncate
## note: #SBATCH -n 999 is not a directive here
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
