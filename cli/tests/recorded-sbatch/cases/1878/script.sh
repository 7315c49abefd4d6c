#!/bin/bash
#SBATCH --exclusive
#SBATCH --signal=USR1@60
#SBATCH --kill-on-invalid-dep yes

srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
