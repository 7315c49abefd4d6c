#!/bin/bash
#SBATCH --mincpus=8
#SBATCH --gres=none

#SBATCH --mem=16g
#SBATCH --begin=2030-06-01T12:00:00
#SBATCH -A physics
#SBATCH --gpus=1
# SBATCH --mem=1T (not a directive: space)
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
