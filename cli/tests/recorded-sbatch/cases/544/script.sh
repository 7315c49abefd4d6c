#!/bin/bash

#SBATCH --export=COMBO=1
#SBATCH --time 30
#SBATCH --begin=2030-06-01T12:00:00
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
