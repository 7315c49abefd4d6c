#!/bin/bash
#SBATCH -N 2
#SBATCH --open-mode=append
#SBATCH --nice=-3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
