#!/bin/bash

## note: #SBATCH -n 999 is not a directive here
#SBATCH -D /tmp
## note: #SBATCH -n 999 is not a directive here
#SBATCH --reservation=nosuchresv
#SBATCH --cpus-per-gpu=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
