#!/bin/bash

#SBATCH --time-min=10
## note: #SBATCH -n 999 is not a directive here
#SBATCH --comment="combo, with comma"
#SBATCH --exclusive user

#SBATCH -a0-15:4
#SBATCH --mem 512
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
