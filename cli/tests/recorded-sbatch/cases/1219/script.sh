#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -n 3
#SBATCH --comment="combo, with comma"
#SBATCH --exclusive
#SBATCH --open-mode=append
#SBATCH --oversubscribe
#SBATCH -c 64
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
