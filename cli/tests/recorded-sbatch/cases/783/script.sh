#!/bin/bash
#PBS -l walltime=00:30:00
#SBATCH -t 150
#SBATCH --signal=USR1@60

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
