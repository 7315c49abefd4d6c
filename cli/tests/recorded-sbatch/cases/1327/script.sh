#!/bin/bash
#SBATCH --ntasks-per-node=1
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH --exclusive
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
