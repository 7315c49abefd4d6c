#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -t 60:00
#SBATCH --ntasks-per-node=1
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
