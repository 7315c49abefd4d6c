#!/bin/bash
#SBATCH --gpus=a100:2
#SBATCH -J "two words"
#SBATCH --mem-per-cpu 2048K
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
