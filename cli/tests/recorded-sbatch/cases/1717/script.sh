#!/bin/bash
#SBATCH --no-requeue
#SBATCH --ntasks=16
#SBATCH -a 0-15:4
#SBATCH --nodelist n[1-2]
# SBATCH --mem=1T (not a directive: space)
#SBATCH --comment "it's # here"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
