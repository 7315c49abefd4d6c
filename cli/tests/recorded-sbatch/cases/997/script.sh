#!/bin/bash

## note: #SBATCH -n 999 is not a directive here
#SBATCH -i in-%j.txt
#SBATCH --chdir rel
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
