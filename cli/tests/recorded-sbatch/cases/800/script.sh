#!/bin/bash
#PBS -q debug
#SBATCH -c 2
#SBATCH -s
#SBATCH -N1-1
#SBATCH --mail-type END
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
