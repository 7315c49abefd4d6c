#!/bin/bash

#PBS -o pbs.out

#SBATCH -A physics
#SBATCH --cpus-per-t 2
#SBATCH --signal B:TERM
#SBATCH --deadline=2031-01-01T00:00:00
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
