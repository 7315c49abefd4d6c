#!/bin/bash
#SBATCH --mem=2048K
#SBATCH -ee-%j.txt
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH -J "two words"
# SBATCH --mem=1T (not a directive: space)
#SBATCH -x n1
#PBS -j oe
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
