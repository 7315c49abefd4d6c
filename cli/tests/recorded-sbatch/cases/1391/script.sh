#!/bin/bash
#SBATCH --gpus 1
#SBATCH --ntasks-per-n 2
#SBATCH --begin=2030-06-01T12:00
#SBATCH --nice=-3
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
