#!/bin/bash
#SBATCH -b 2031-02-03
#PBS -l nodes=2:ppn=2
# SBATCH --mem=1T (not a directive: space)
#SBATCH --time-min=45
#SBATCH -c 64
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
