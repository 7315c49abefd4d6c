#!/bin/bash

#SBATCH --begin 2030-06-01T12:00
#SBATCH --exclude n[3-4]
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
