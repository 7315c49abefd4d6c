#!/bin/bash
#SBATCH -G a100:5
#SBATCH --export NONE
#SBATCH --open-mode append
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
