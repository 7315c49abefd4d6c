#!/bin/bash
#SBATCH --mem-per-cpu=256
#SBATCH --begin=2030-06-01T12:00:00
#SBATCH -p batch

#SBATCH --ntasks-per-node=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
