#!/bin/bash
#SBATCH --wckey=k1
#SBATCH --begin 2030-06-01T12:00:00
#SBATCH --ntasks-per-node 2
#SBATCH --ntasks=16
#SBATCH -G a100:5

srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
