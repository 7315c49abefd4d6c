#!/bin/bash
#SBATCH --kill-on-invalid-dep=yes
#SBATCH --gpus-per-task=a100:1
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gres gpu:a100:2
#SBATCH -b 2031-02-03
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
