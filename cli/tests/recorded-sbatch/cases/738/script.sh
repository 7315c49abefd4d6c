#!/bin/bash
#SBATCH --signal USR1@60
# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks-per-node 2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
