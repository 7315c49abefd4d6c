#!/bin/bash
#SBATCH --time-min=10
#SBATCH --signal=USR1@60
#SBATCH --wckey=k1
## note: #SBATCH -n 999 is not a directive here
#SBATCH -t0
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
