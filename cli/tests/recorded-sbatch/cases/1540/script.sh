#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem 100m
#SBATCH -b 2031-02-03
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
