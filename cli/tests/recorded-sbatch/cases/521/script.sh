#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --nodes=1-2
#SBATCH --nice=5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
