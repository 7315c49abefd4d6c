#!/bin/bash
#SBATCH -t INFINITE

#SBATCH --time-min=10
#SBATCH -x n1
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
