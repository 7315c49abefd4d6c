#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH -iin-%j.txt
#SBATCH --signal USR1@60
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
