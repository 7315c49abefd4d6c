#!/bin/bash
#SBATCH -n3
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mail-user=a@b.c
#SBATCH --mincpus=8
#SBATCH -o out-%4j.txt
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
