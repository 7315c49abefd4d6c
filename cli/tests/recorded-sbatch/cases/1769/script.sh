#!/bin/bash
#SBATCH --gpus=1g.10gb:3
#SBATCH --gres gpu:2
# SBATCH --mem=1T (not a directive: space)
#SBATCH -q high
#SBATCH -H
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
