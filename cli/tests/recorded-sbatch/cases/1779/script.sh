#!/bin/bash
#SBATCH -xn1
#SBATCH --reservation=nosuchresv
#SBATCH --nodelist n[1-2]
#SBATCH --deadline 2031-01-01T00:00:00
# SBATCH --mem=1T (not a directive: space)
#SBATCH -A physics
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
