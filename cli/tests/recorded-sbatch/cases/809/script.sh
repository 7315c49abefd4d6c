#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#PBS -j oe
#SBATCH --reservation nosuchresv
#SBATCH --nice=-3
#SBATCH --mem=600G
#SBATCH --deadline 2031-01-01T00:00:00
#SBATCH --mem-per-gpu=8G
#SBATCH --mail-type END
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
