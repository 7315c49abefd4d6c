#!/bin/bash
#SBATCH --mem 600G
#SBATCH -c 2
#SBATCH --time-min 45
#SBATCH -J"two words"
#SBATCH -t 30:15
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
