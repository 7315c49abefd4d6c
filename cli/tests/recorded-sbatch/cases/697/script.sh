#!/bin/bash
#SBATCH --error=%x.err
## note: #SBATCH -n 999 is not a directive here
#SBATCH -c 2
#SBATCH -H
#SBATCH -d afterok:{P2},afternotok:{P3}
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
