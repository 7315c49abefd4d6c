#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --comment="combo, with comma"
#SBATCH --begin=2030-06-01T12:00
#SBATCH -iin-%j.txt
#SBATCH --part=debug
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
