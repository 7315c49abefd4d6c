#!/bin/bash

#SBATCH --chdir /scratch/oracle
#SBATCH --ntasks-per-node=1
#SBATCH --exclude n[3-4]
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
