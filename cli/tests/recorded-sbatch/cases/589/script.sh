#!/bin/bash
#SBATCH -J combo
#SBATCH --mem-per-cpu=1G
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
