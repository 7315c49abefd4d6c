#!/bin/bash
#SBATCH -H
#SBATCH --open-mode append
#SBATCH --time-min 1:00:00
#SBATCH --job-name named
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
