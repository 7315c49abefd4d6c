#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --exclusive
#SBATCH --no-requeue
#SBATCH --chdir=/scratch/oracle
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
