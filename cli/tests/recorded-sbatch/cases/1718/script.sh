#!/bin/bash
#SBATCH -s
#SBATCH --requeue

#PBS -l walltime=00:30:00
# SBATCH --mem=1T (not a directive: space)
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
