#!/bin/bash
#SBATCH --export NONE
#SBATCH --exclude n[3-4]
#SBATCH --time-min=1:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
