#!/bin/bash
#SBATCH --dependency=singleton
#SBATCH --time=30
#SBATCH -n 1
#SBATCH --mem-per-cpu=1G
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
