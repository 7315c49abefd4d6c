#!/bin/bash
#SBATCH --ntasks-per-n=2
#SBATCH --comment="it's # here"
## note: #SBATCH -n 999 is not a directive here
#SBATCH --ntasks-per-node=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
