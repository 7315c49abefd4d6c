#!/bin/bash
#SBATCH --signal=B:TERM
#SBATCH --time-min 1:00:00
#SBATCH --mem-per-gpu=8G
## note: #SBATCH -n 999 is not a directive here
#PBS -N pbsjob
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
