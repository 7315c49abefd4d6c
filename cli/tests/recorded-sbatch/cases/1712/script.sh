#!/bin/bash
#SBATCH --exclusive
#SBATCH -i in-%j.txt
#SBATCH --gres gpu:2
#SBATCH --signal USR1@60
#SBATCH --no-requeue
#SBATCH -D/tmp
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
