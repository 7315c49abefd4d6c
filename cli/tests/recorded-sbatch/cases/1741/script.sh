#!/bin/bash
#SBATCH --qos normal
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem-per-cpu=1G
#SBATCH --gpus-per-node=a100:1
#SBATCH --nodes=1-3
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
