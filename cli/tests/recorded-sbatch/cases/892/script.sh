#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -x n1
#SBATCH -i in-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
