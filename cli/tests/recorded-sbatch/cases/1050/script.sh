#!/bin/bash
#SBATCH --time-min=1:00:00
#SBATCH --mincpus 8
#SBATCH --exclude=n[3-4]
#SBATCH --mem 16g
#SBATCH -iin-%j.txt
#SBATCH --gpus-per-task=1
# SBATCH --mem=1T (not a directive: space)
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
