#!/bin/bash
#PBS -o pbs.out
#SBATCH --gpus-per-task=a100:1
#SBATCH --export ALL,A=1,B=2
#SBATCH --requeue
#SBATCH -J"two words"
#SBATCH --cpus-per-gpu 4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
