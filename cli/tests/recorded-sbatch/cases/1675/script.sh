#!/bin/bash
#SBATCH --gpus-per-task=1
#SBATCH --chdir=/scratch/oracle


#SBATCH -e e-%j.txt
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
