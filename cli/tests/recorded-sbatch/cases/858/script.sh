#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --exclude n[3-4]
#SBATCH --wckey=k1
#SBATCH --export=COMBO=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
