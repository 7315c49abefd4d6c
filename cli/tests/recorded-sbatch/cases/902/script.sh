#!/bin/bash

#SBATCH -q high
#SBATCH --tim=15
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
