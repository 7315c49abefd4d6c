#!/bin/bash
#SBATCH --mem-per-gpu 1024
#SBATCH --array 1-7:3%2
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
