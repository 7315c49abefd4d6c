#!/bin/bash
#SBATCH --mail-user=a@b.c
#SBATCH --open-mode append
## note: #SBATCH -n 999 is not a directive here
#SBATCH -ee-%j.txt
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
