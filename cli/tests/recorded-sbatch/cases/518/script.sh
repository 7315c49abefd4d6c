#!/bin/bash
#SBATCH --time-min 10
#SBATCH --nodes=2-4
# SBATCH --mem=1T (not a directive: space)
#SBATCH -t 30:15
#SBATCH --job-name=named
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
