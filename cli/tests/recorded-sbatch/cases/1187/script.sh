#!/bin/bash
#SBATCH --job-name=named
#SBATCH --mem-per-cpu 256
#SBATCH --deadline=2031-01-01T00:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
