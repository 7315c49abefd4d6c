#!/bin/bash
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH --mem-per-gpu=1024
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
