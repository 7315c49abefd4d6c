#!/bin/bash
#SBATCH --dependency after:{P4}+3

#SBATCH --begin 2030-06-01T12:00
# SBATCH --mem=1T (not a directive: space)
#SBATCH --time-min 1:00:00
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
