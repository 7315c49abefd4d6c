#!/bin/bash
#SBATCH --open-mode append
# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks-per-node=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
