#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem=512
#SBATCH --export=NONE
#SBATCH --mem-per-cpu=256
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
