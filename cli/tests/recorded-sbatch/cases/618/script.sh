#!/bin/bash
#SBATCH --mem-per-gpu 1024
#SBATCH -t 30:15

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
