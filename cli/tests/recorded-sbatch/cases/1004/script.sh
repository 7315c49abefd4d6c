#!/bin/bash
#SBATCH --comment="it's # here"
# SBATCH --mem=1T (not a directive: space)
#SBATCH -Ga100:5
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
