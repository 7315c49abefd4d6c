#!/bin/bash
#SBATCH --ntasks-per-node=2
# SBATCH --mem=1T (not a directive: space)

#SBATCH --requeue
#SBATCH -w "n3,n4"
## note: #SBATCH -n 999 is not a directive here
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
