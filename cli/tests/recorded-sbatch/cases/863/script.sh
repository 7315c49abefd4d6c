#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --comment "combo, with comma"
#SBATCH --exclusive
#SBATCH --begin 2030-06-01T12:00:00
#SBATCH --gpus-per-task 1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
