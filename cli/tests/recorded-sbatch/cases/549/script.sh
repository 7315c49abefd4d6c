#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -N3
#SBATCH -a0-15:4
## note: #SBATCH -n 999 is not a directive here
#SBATCH -n 130
#SBATCH -G a100:5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
