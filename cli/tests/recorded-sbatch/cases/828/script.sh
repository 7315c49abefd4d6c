#!/bin/bash

#SBATCH --comment="random combo"
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mail-user=a@b.c
#SBATCH --export=ALL
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
