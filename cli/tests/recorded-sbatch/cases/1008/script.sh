#!/bin/bash

## note: #SBATCH -n 999 is not a directive here
#SBATCH --mincpus=8

#SBATCH --kill-on-invalid-dep=yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
