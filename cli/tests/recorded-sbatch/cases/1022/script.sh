#!/bin/bash
#SBATCH --kill-on-invalid-dep=yes
#SBATCH -e e-%j.txt
#SBATCH --time-min=45
# SBATCH --mem=1T (not a directive: space)
#SBATCH -t 60:00
# SBATCH --mem=1T (not a directive: space)

#SBATCH --gpus a100:2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
