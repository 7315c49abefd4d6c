#!/bin/bash
#SBATCH -i in-%j.txt
#SBATCH -N 1
#SBATCH --chdir /scratch/oracle
## note: #SBATCH -n 999 is not a directive here
#SBATCH -H
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
