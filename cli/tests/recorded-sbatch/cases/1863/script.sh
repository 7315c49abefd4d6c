#!/bin/bash
#PBS -l mem=2gb
## note: #SBATCH -n 999 is not a directive here
#SBATCH -i in-%j.txt
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
