#!/bin/bash
#SBATCH --gpus-per-task 1
#SBATCH --mem-per-gpu=8G
#SBATCH --dependency=after:{P4}+3
#SBATCH -s
#SBATCH -H
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
