#!/bin/bash
#SBATCH --exclusive=user
#SBATCH -o %A_%a.out
#SBATCH --comment "random combo"
#SBATCH --begin 2030-06-01T12:00:00
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
