#!/bin/bash
#SBATCH --kill-on-invalid-dep yes
#SBATCH -t INFINITE
#SBATCH --mem 0
## note: #SBATCH -n 999 is not a directive here
#SBATCH -H

#SBATCH -s
# SBATCH --mem=1T (not a directive: space)
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
