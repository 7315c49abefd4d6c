#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks-per-node=2
#SBATCH -b 2031-02-03

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
