#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --signal USR1@60
#SBATCH -qhigh
#SBATCH --cpus-per-gpu=2
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem=512
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
