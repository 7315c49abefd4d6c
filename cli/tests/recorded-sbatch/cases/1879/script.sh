#!/bin/bash
#SBATCH --signal USR1@60
#SBATCH --nodes 1-3
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-cpu 2048K
#SBATCH -Ja,b
#SBATCH --mem-per-gpu=1024
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
