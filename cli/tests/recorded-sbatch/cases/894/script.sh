#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --open-mode=append
#SBATCH --ntasks=16
#SBATCH --cpus-per-task 8
## note: #SBATCH -n 999 is not a directive here
#SBATCH -t 0
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
