#!/bin/bash
#SBATCH -w "n3,n4"
#SBATCH --time-min 45
#SBATCH --no-requeue
#BSUB -J lsf
#SBATCH -N1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
