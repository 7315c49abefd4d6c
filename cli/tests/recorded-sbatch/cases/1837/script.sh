#!/bin/bash
#SBATCH --time-min=10
#SBATCH -A physics
#SBATCH --ntasks-per-node=4
#PBS -l mem=2gb
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
