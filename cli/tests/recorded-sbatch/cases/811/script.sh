#!/bin/bash
#SBATCH --mem-per-cpu 1G
#SBATCH --export=ALL
# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks-per-node=2
#SBATCH -D /tmp
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
