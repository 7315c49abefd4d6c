#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -N 1
#SBATCH --account=bio
#SBATCH --cpus-per-task 8
#SBATCH -n1
#SBATCH --reservation=nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
