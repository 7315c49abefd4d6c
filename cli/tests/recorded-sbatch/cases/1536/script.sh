#!/bin/bash
#SBATCH --open-mode truncate
#SBATCH --exclusive
#SBATCH -t 60:00
#PBS -q debug
# SBATCH --mem=1T (not a directive: space)
#SBATCH --tmp 1G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
