#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -J a,b
#SBATCH --gpus-per-task=a100:1
#SBATCH --output %%-%j
#SBATCH --time-min 1:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
