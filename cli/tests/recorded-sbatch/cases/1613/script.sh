#!/bin/bash
#SBATCH -H
#SBATCH --gpus-per-task=1
#SBATCH -ee-%j.txt
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
