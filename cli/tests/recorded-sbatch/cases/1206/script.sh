#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --nod 2

#PBS -j oe
# SBATCH --mem=1T (not a directive: space)
#SBATCH -o /dev/null
#SBATCH --no-requeue
#SBATCH --gres=gpu:a100:2

#SBATCH --mail-user a@b.c
#SBATCH --job-name named
#SBATCH --mem-per-cpu=256
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
