#!/bin/bash
#SBATCH --wckey=k1
## note: #SBATCH -n 999 is not a directive here
#PBS -N pbsjob
#SBATCH --signal=B:TERM
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
