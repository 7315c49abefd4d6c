#!/bin/bash
#SBATCH --ntasks-per-node=4
#SBATCH -a 0-15:4
#SBATCH --job=abbr
#SBATCH -s
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
