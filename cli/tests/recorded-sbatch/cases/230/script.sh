#!/bin/bash
#SBATCH -J before
set -e
#SBATCH -J after
#SBATCH -t 5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
