#!/bin/bash
#SBATCH --output %x-%j.log

#SBATCH -t60:00
#SBATCH --gpus-per-task 1
#SBATCH --error=%x.err
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
