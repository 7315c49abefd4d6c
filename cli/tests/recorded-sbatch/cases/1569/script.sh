#!/bin/bash
#SBATCH --reservation=nosuchresv
#SBATCH --mail-user=a@b.c


## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gres=gpu:1
# SBATCH --mem=1T (not a directive: space)
#SBATCH --overcommit
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
