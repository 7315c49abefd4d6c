#!/bin/bash
#SBATCH --export=NONE
#SBATCH --gpus=a100:2

#SBATCH -pbatch,debug
#SBATCH --output=%x-%j.log

#SBATCH --mem=512
#SBATCH -a 0-15:4
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
