#!/bin/bash
#SBATCH --mem=4G
#SBATCH --begin=2030-06-01T12:00:00
#SBATCH --gpus a100:2
#SBATCH --ntasks-per-node=2
#SBATCH --ntasks=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
