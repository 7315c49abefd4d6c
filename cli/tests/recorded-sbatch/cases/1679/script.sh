#!/bin/bash
#SBATCH --array=0-99%5
#SBATCH --ntasks-per-node 2
#SBATCH --chdir=/scratch/oracle
#SBATCH --gpus-per-task=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
