#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -H
# SBATCH --mem=1T (not a directive: space)
#SBATCH --time-min=10
#SBATCH --error=%x.err
#SBATCH --partition=debug
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
