#!/bin/bash
#SBATCH --comment="combo, with comma"
# SBATCH --mem=1T (not a directive: space)
#SBATCH -H
#SBATCH -b2031-02-03
#SBATCH --nice=5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
