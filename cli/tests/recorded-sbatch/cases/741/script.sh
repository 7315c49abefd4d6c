#!/bin/bash
#SBATCH -A physics
#SBATCH -p "batch,debug"
#SBATCH --time-min 10
#SBATCH -b2031-02-03
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
