#!/bin/bash
#SBATCH --gpus=1g.10gb:3
#SBATCH --array=0-15
#SBATCH --chdir=/scratch/oracle
# SBATCH --mem=1T (not a directive: space)
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
