#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --array=1-7:3%2
#SBATCH --begin 2030-06-01T12:00
#SBATCH --time-min=1:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
