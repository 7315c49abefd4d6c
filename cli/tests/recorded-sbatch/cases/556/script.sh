#!/bin/bash
#SBATCH --gres gpu:a100:2
#SBATCH --time-min=10
#SBATCH -a "1,3,5"
#SBATCH -n 8
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
