#!/bin/bash
#PBS -l walltime=00:30:00
#SBATCH --cpus-per-gpu 4
#SBATCH -H
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
