#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-gpu=8G
## note: #SBATCH -n 999 is not a directive here
#SBATCH --chdir=/scratch/oracle
#SBATCH --part=debug
#SBATCH --cpus-per-gpu 2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
