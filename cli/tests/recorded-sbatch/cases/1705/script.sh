#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH -x n1
#SBATCH --signal=USR1@60
#PBS -j oe
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
