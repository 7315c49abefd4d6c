#!/bin/bash

#SBATCH --mincpus 8
#SBATCH --account bio
#SBATCH --gpus-per-task=1
#SBATCH --mail-user=a@b.c

## note: #SBATCH -n 999 is not a directive here
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
