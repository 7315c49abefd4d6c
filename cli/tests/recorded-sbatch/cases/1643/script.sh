#!/bin/bash
#SBATCH --mem-per-cpu 1G
# SBATCH --mem=1T (not a directive: space)
#SBATCH --output=o-%j.out
#SBATCH -c 2
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
