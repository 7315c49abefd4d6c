#!/bin/bash
#SBATCH -o %A_%a.out
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH -i in-%j.txt
#SBATCH -q high
#SBATCH --gres none
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
