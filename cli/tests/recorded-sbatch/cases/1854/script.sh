#!/bin/bash

#SBATCH --part=debug
## note: #SBATCH -n 999 is not a directive here
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
