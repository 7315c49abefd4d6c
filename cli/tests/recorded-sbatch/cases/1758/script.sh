#!/bin/bash

#SBATCH --ntasks-per-node 2
#SBATCH --mincpus 8
#SBATCH --mail-user=a@b.c
# SBATCH --mem=1T (not a directive: space)
#SBATCH --chdir=rel
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
