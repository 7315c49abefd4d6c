#!/bin/bash
## note: #SBATCH -n 999 is not a directive here

#SBATCH -a 0-15:4
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
