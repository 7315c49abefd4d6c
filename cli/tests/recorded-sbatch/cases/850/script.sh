#!/bin/bash
#SBATCH --cpus-per-gpu=4

#SBATCH --gres gpu:1
#SBATCH --ntasks-per-node 2
#SBATCH -i in-%j.txt
#SBATCH --ntasks-per-n=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
