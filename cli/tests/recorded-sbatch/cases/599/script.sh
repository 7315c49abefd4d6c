#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --time-min=10
#SBATCH -G2
#SBATCH --time 2:00:00
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
#SBATCH -b 2031-02-03
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
