#!/bin/bash

## note: #SBATCH -n 999 is not a directive here
#SBATCH -n 3
#SBATCH --exclude=n[3-4]
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
