#!/bin/bash
#SBATCH --open-mode append
#SBATCH --export COMBO=1
#SBATCH -t0
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
