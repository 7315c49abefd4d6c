#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --comment "combo, with comma"
#SBATCH --time-min=10
#SBATCH --output=o-%j.out
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
