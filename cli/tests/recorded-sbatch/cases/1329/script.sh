#!/bin/bash
#SBATCH -x n1
#SBATCH --exclusive
#SBATCH --wckey=k1
#SBATCH --output %%-%j
#SBATCH --mem-per-cpu=256
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
