#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#PBS -q debug
#SBATCH --requeue
# SBATCH --mem=1T (not a directive: space)
#SBATCH -w n3,n4
#SBATCH --account bio
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
