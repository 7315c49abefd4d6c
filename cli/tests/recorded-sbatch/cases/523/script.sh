#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --time-min 10
#SBATCH --mem 4G
# SBATCH --mem=1T (not a directive: space)
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
