#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -N 1
#SBATCH --dependency=afterok:{P1}
#SBATCH --ntasks=16
#SBATCH --no-requeue
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
