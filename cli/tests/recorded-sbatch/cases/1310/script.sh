#!/bin/bash

#SBATCH --comment "combo, with comma"
#SBATCH --mem-per-gpu=8G
#SBATCH --oversubscribe

#SBATCH --time-min=1:00:00
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
