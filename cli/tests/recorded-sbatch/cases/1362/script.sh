#!/bin/bash


#SBATCH --no-requeue
#SBATCH --mail-user=a@b.c
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
