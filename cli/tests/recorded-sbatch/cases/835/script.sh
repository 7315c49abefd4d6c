#!/bin/bash
#SBATCH --tim 15
#SBATCH --chdir /scratch/oracle
#SBATCH --cpus-per-gpu 4
#SBATCH --mincpus=8

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
