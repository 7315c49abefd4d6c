#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH -q high
# SBATCH --mem=1T (not a directive: space)
#SBATCH --cpus-per-gpu 2
#SBATCH --gpus-per-task a100:1
#SBATCH --time-min 10
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
