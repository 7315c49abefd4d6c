#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -d afterok:{P5}_2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
