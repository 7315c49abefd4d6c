#!/bin/bash
#SBATCH -p batch,debug
#SBATCH --ntasks-per-node=2
#SBATCH --exclusive
#SBATCH -N 3
#SBATCH --comment="combo, with comma"
#SBATCH --mem-per-cpu=2048K
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
