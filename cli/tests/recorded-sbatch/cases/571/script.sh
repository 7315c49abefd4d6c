#!/bin/bash
#SBATCH -N 1
#SBATCH --export=ALL
#SBATCH --time-min=10
#SBATCH -d afterok:{P5}_2
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
