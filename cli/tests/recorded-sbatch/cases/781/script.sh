#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH --qos=normal
#SBATCH --signal B:TERM
#PBS -N pbsjob
#SBATCH --gpus-per-task=1
#SBATCH --comment "random combo"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
