#!/bin/bash
#SBATCH -a 0-15:4

#SBATCH --time-min=10
#SBATCH -c64
#SBATCH --exclusive
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
