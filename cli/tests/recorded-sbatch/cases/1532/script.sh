#!/bin/bash
#SBATCH --time-min=1:00:00
#SBATCH --signal=B:TERM
#SBATCH --ntasks-per-core=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
