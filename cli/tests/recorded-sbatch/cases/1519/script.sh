#!/bin/bash
#SBATCH -t1-0
#SBATCH --gpus 1g.10gb:3
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
