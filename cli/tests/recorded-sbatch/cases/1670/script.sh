#!/bin/bash
#SBATCH --exclusive
#SBATCH --time-min 10

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
