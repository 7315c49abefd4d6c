#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --requeue
# SBATCH --mem=1T (not a directive: space)
#SBATCH -q high
#SBATCH --ntasks 16
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
