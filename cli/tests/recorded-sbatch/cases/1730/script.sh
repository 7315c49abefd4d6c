#!/bin/bash
#SBATCH -A physics
## note: #SBATCH -n 999 is not a directive here
#SBATCH --no-requeue
#SBATCH --ntasks=65
#SBATCH --open-mode=append
#SBATCH --qos=normal
# SBATCH --mem=1T (not a directive: space)
#SBATCH -i in-%j.txt
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
