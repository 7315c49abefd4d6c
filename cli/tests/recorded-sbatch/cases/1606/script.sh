#!/bin/bash
#SBATCH --gpus-per-task=1
## note: #SBATCH -n 999 is not a directive here
#SBATCH --cpus-per-task=8
#SBATCH -a 0-15:4
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
