#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --comment="it's # here"
#SBATCH --oversubscribe
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
