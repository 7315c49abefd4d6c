#!/bin/bash
#SBATCH --dependency singleton
#SBATCH -t 2-0:0
#SBATCH -s
#SBATCH --job=abbr
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
