#!/bin/bash
#SBATCH --mem-per-cpu=256
#SBATCH --open-mode append
#SBATCH --mem=0

#SBATCH --mincpus=8
#SBATCH --exclusive
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
