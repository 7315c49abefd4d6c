#!/bin/bash
#SBATCH -H
#SBATCH --cpus-per-t 2
#SBATCH --mem-per-cpu=256
#SBATCH -N4
#SBATCH --kill-on-invalid-dep yes
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
