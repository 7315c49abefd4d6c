#!/bin/bash
#SBATCH -o out-%4j.txt
#SBATCH --mem-per-cpu 1G
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gres gpu:1
#SBATCH -w n3,n4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
