#!/bin/bash
#SBATCH --nice=5
#SBATCH -n3
#SBATCH -D /tmp
#SBATCH -b 2031-02-03
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
