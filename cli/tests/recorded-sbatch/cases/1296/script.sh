#!/bin/bash
#SBATCH -iin-%j.txt
#SBATCH --qos normal
#SBATCH --tim=15

#SBATCH -xn1
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
