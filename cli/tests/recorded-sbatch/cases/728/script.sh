#!/bin/bash
#SBATCH -G2
#SBATCH -e e-%j.txt
#SBATCH --ntasks-per-node=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
