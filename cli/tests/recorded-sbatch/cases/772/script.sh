#!/bin/bash
#PBS -l walltime=00:30:00
## note: #SBATCH -n 999 is not a directive here
#SBATCH --cpus-per-task 8
#SBATCH --gpus-per-task 1
#SBATCH --chdir=rel
#SBATCH --begin=2030-06-01T12:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
