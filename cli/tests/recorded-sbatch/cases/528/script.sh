#!/bin/bash
#SBATCH -t 150
#SBATCH --job-name named
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
