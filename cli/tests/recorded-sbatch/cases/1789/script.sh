#!/bin/bash
#SBATCH --nice=0
## note: #SBATCH -n 999 is not a directive here
#PBS -N pbsjob
# SBATCH --mem=1T (not a directive: space)

#SBATCH --kill-on-invalid-dep=yes
#SBATCH --mem 4G
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
