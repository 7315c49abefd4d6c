#!/bin/bash
#SBATCH --mem-per-cpu=2048K
#SBATCH -pbatch,debug
#SBATCH --gres=gpu:a100:2


## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
