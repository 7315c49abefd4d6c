#!/bin/bash
#SBATCH --oversubscribe
#SBATCH --mem-per-gpu=8G

#SBATCH --dep=afterok:{P1}
#SBATCH --gpus-per-task=a100:1
#SBATCH -H
#SBATCH --kill-on-invalid-dep yes
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
