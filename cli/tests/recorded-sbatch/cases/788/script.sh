#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -o %A_%a.out
#SBATCH --mail-user=a@b.c
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
