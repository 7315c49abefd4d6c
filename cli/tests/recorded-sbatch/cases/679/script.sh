#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-cpu=1G
#SBATCH --cpus-per-gpu 4
#SBATCH --signal=USR1@60
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
