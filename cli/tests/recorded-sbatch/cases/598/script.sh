#!/bin/bash
#SBATCH -H
## note: #SBATCH -n 999 is not a directive here
#SBATCH --ntasks-per-node 2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
