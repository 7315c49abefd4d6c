#!/bin/bash
#SBATCH -Aphysics
#SBATCH --cpus-per-task 8
#SBATCH --mem-per-cpu 256
#SBATCH -H
#SBATCH -J"two words"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
