#!/bin/bash
#SBATCH -A physics
#SBATCH --deadline=2031-01-01T00:00:00
#SBATCH --error=%x.err
cd $SLURM_SUBMIT_DIR
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
