#!/bin/bash
#SBATCH --mem-per-gpu 1024
#SBATCH --nice=-3
#SBATCH --cpus-per-gpu 4
#SBATCH --output %x-%j.log
#PBS -j oe
#SBATCH --exclusive

# SBATCH --mem=1T (not a directive: space)
#SBATCH -Aphysics
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
