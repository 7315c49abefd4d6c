#!/bin/bash
#SBATCH --job-name=x#y
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
