#!/bin/bash

# SBATCH --mem=1T (not a directive: space)
#SBATCH --time-min 10
#SBATCH --nodes 1-3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
