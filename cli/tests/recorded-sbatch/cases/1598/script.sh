#!/bin/bash
#SBATCH -H
#SBATCH --gpus-per-task=1
#SBATCH --chdir /scratch/oracle
#SBATCH --mem-per-cpu=1G
#SBATCH --time-min=10

module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
