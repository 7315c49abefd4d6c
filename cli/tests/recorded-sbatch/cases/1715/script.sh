#!/bin/bash
#SBATCH -A physics
#PBS -o pbs.out
#SBATCH -n 4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
