#!/bin/bash
#SBATCH --open-mode=append
#SBATCH -n 3
# SBATCH --mem=1T (not a directive: space)
#SBATCH --no-requeue
## note: #SBATCH -n 999 is not a directive here
#SBATCH --export=NONE
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
