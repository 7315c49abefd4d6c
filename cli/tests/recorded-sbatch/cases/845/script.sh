#!/bin/bash
#SBATCH --gpus-per-task a100:1
#SBATCH --no-requeue
# SBATCH --mem=1T (not a directive: space)
#SBATCH --chdir=rel
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
