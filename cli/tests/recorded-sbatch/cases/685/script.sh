#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -N 4

#SBATCH -t 45:30
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
