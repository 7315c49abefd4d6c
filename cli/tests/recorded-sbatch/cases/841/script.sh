#!/bin/bash
#SBATCH --begin=2030-06-01T12:00
#SBATCH --gpus-per-task=a100:1

# SBATCH --mem=1T (not a directive: space)
#SBATCH --export "ALL,A=1,B=2"
#SBATCH -i in-%j.txt
#SBATCH --mincpus=8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
