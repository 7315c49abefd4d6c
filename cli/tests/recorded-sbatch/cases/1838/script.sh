#!/bin/bash
#SBATCH --requeue

#SBATCH -i in-%j.txt
#SBATCH -qhigh
#SBATCH -N 2
# SBATCH --mem=1T (not a directive: space)
#SBATCH --signal=B:TERM
#SBATCH --gpus-per-task=a100:1
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
