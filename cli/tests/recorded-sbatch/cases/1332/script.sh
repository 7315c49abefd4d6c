#!/bin/bash
#SBATCH --time-min=1:00:00
# SBATCH --mem=1T (not a directive: space)
#SBATCH --no-requeue
#SBATCH -wn1
# SBATCH --mem=1T (not a directive: space)
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
