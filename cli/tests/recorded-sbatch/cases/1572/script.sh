#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --ntasks-per-core 2
#SBATCH --comment="combo, with comma"
#SBATCH --array=1-7:3%2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
