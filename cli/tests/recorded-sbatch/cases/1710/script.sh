#!/bin/bash
#SBATCH -xn1
#SBATCH --gpus-per-task=a100:1
#SBATCH -p batch
#SBATCH --mem-per-gpu 1024
#SBATCH --export="ALL,A=1,B=2"
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
