#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --wckey=k1
#SBATCH --nice=5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
