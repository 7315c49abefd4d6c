#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --begin 2030-06-01T12:00:00
#SBATCH --chdir=rel
#SBATCH --output=o-%j.out
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
