#!/bin/bash
#SBATCH -N 1
## note: #SBATCH -n 999 is not a directive here

#SBATCH --qos=normal
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
