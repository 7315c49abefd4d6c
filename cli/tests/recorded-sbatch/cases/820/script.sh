#!/bin/bash
#SBATCH -D /tmp
#SBATCH --ntasks 16
#SBATCH --gres=gpu:2
#SBATCH -wn3,n4
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
#SBATCH --nodes 1-3
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
