#!/bin/bash
#SBATCH --mail-user a@b.c
#SBATCH --ntasks-per-node 1
#SBATCH --partition debug
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
