#!/bin/bash
#SBATCH -i in-%j.txt
#SBATCH -H


# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --signal=USR1@60
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
