#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -H
#SBATCH --mem-per-cpu=256
#SBATCH --qos normal
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
