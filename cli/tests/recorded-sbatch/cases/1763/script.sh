#!/bin/bash
#SBATCH --cpus-per-gpu 2
# SBATCH --mem=1T (not a directive: space)
#SBATCH --exclusive user
#SBATCH -H
#SBATCH --exclude=n[3-4]
#SBATCH -tUNLIMITED

#SBATCH --error=%x.err
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
