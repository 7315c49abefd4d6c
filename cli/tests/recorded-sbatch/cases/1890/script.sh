#!/bin/bash

#SBATCH -n3
#SBATCH --cpus-per-gpu=2
#SBATCH --array 1-7:3%2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
