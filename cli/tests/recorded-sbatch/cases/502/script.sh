#!/bin/bash
#SBATCH --mem 1T
## note: #SBATCH -n 999 is not a directive here
#SBATCH --time 30
#SBATCH --ntasks 16
#SBATCH -d "afterok:{P2},afternotok:{P3}"
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
