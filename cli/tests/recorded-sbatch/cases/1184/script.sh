#!/bin/bash
#SBATCH --ntasks-per-node 4
#SBATCH --open-mode append
#SBATCH --mem-per-gpu=1024
#SBATCH -G 2
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
