#!/bin/bash
#SBATCH -c 2
#SBATCH -b 2031-02-03
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH -N3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
