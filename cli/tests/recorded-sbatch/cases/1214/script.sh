#!/bin/bash

#SBATCH -N1-1
#SBATCH -J"a,b"
#SBATCH --ntasks-per-node 2
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
