#!/bin/bash
## note: #SBATCH -n 999 is not a directive here

# SBATCH --mem=1T (not a directive: space)
#SBATCH --export=COMBO=1
#SBATCH -b 2031-02-03
#SBATCH -H
#SBATCH -d afterok:{P2},afternotok:{P3}
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
