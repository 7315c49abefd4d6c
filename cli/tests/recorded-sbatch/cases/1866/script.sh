#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
#SBATCH --reservation nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
