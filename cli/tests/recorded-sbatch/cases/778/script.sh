#!/bin/bash
#SBATCH --exclude n[3-4]
#SBATCH --ntasks=65
#SBATCH --exclusive=user
#SBATCH -w n3,n4
#PBS -l walltime=00:30:00
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
