#!/bin/bash
#SBATCH --kill-on-invalid-dep=yes
#SBATCH --nice=0
# SBATCH --mem=1T (not a directive: space)
#SBATCH --export=ALL,A=1,B=2
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
