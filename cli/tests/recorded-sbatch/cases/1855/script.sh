#!/bin/bash
#SBATCH -N 1-1
#SBATCH --qos=normal
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
