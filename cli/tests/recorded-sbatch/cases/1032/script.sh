#!/bin/bash
#SBATCH -i in-%j.txt
#SBATCH --gpus-per-task 2
#SBATCH -G a100:5
#SBATCH -t60:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
