#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --nice -3
#SBATCH -H
#SBATCH --signal=B:TERM
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
