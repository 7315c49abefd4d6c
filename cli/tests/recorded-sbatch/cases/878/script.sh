#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --oversubscribe
#SBATCH --gres gpu:a100:2
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
