#!/bin/bash
#SBATCH -J "two words"
#SBATCH --chdir /scratch/oracle
# SBATCH --mem=1T (not a directive: space)
#SBATCH --cpus-per-gpu 2
#SBATCH -c 64
#SBATCH --exclude=n[3-4]
#SBATCH --mem-per-gpu 1024
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
