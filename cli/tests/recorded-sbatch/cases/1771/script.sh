#!/bin/bash
#SBATCH --begin 2030-06-01T12:00:00
# SBATCH --mem=1T (not a directive: space)
#SBATCH --comment="random combo"
#SBATCH --nodes=1-3
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
