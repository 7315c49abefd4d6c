#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH --gres none
#SBATCH --cpus-per-task 8
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem=1024MB
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
