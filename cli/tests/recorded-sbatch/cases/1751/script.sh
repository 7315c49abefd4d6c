#!/bin/bash
#SBATCH --mem=2048K
#SBATCH --mem-per-cpu 1G
#SBATCH -x n1
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
