#!/bin/bash
#SBATCH -o%A_%a.out
#SBATCH --ntasks-per-node=2
#SBATCH --nodes=1-2
# SBATCH --mem=1T (not a directive: space)
#SBATCH -G a100:5
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
