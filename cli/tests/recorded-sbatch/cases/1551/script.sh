#!/bin/bash
#SBATCH --dep=afterok:{P1}
#SBATCH --cpus-per-gpu 4

#SBATCH --signal=USR1@60
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
