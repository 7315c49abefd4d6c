#!/bin/bash
#SBATCH --gpus-per-task=2
#SBATCH --mincpus 8

# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks 65
#SBATCH -G2
#SBATCH --mail-user=a@b.c
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
