#!/bin/bash

# SBATCH --mem=1T (not a directive: space)
#SBATCH --requeue
#SBATCH --cpus-per-gpu 4
#SBATCH --signal=B:TERM
#SBATCH --array=1-3%0
#SBATCH --comment="combo, with comma"
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
