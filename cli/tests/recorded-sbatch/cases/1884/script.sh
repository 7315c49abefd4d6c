#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-cpu 1G
#SBATCH --job-name named
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
