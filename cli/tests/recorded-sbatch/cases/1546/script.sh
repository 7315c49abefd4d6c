#!/bin/bash

#SBATCH --part debug
#SBATCH --array 0-99%5
#SBATCH --export=COMBO=1
#SBATCH --nice -3
## note: #SBATCH -n 999 is not a directive here
#SBATCH --nodes=2-4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
