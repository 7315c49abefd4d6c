#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --nice 0
#SBATCH -s
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
