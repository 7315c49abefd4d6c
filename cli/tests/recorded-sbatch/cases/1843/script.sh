#!/bin/bash

#SBATCH -p batch
## note: #SBATCH -n 999 is not a directive here
#SBATCH --chdir /scratch/oracle
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
