#!/bin/bash
#SBATCH --exclude=n[3-4]
#SBATCH --mem-per-gpu=8G
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
