#!/bin/bash
#SBATCH --array=1-3%0
#SBATCH --partition debug
#SBATCH -Ja,b
#SBATCH --signal=USR1@60
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
