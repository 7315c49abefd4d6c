#!/bin/bash
#SBATCH --ntasks-per-node=2
#SBATCH --output=%x-%j.log
#SBATCH --array=0-15
# SBATCH --mem=1T (not a directive: space)
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
