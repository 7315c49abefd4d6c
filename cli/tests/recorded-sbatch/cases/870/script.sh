#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -w n1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
