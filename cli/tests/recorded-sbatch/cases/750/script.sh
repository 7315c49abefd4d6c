#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -D /tmp
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gres=gpu:2
#SBATCH --reservation=nosuchresv
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
