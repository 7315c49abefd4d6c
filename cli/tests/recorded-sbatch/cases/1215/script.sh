#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --account bio
## note: #SBATCH -n 999 is not a directive here
#PBS -l walltime=00:30:00
#SBATCH --export=COMBO=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
