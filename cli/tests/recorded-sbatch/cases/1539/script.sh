#!/bin/bash
#SBATCH --ntasks=65
#SBATCH --time-min=1:00:00
#SBATCH -o /dev/null
#SBATCH -Aphysics

module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
