#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -p nosuch
# SBATCH --mem=1T (not a directive: space)
#SBATCH -iin-%j.txt
#SBATCH --kill-on-invalid-dep=yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
