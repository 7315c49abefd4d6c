#!/bin/bash
#SBATCH -o /scratch/oracle/%u-%j.out
# SBATCH --mem=1T (not a directive: space)
#SBATCH --begin 2030-06-01T12:00:00
#SBATCH --signal USR1@60
#SBATCH --time-min=10
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
