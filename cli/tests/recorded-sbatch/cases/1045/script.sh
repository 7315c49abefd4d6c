#!/bin/bash
#PBS -o pbs.out
#SBATCH --gpus-per-task 2

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
