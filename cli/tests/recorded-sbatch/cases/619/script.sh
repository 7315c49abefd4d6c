#!/bin/bash

#SBATCH -A physics
#SBATCH --open-mode=append
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
