#!/bin/bash
#SBATCH --ntasks-per-n 2
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
