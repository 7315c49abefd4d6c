#!/bin/bash
#SBATCH --ntasks-per-node=4
# SBATCH --mem=1T (not a directive: space)
#SBATCH --cpus-per-task 8
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
