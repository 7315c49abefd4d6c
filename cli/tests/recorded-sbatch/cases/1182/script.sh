#!/bin/bash
#SBATCH -G a100:5
#SBATCH --ntasks=65
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
