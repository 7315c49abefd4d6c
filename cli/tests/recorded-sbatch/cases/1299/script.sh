#!/bin/bash

#SBATCH --time=30
#SBATCH --mem-per-cpu 2048K
#SBATCH --signal=USR1@60
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
