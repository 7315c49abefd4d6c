#!/bin/bash
#SBATCH -ee-%j.txt
#SBATCH --mem=4G

#SBATCH --ntasks-per-node=2

#SBATCH --nice=-3
#SBATCH --begin=2030-06-01T12:00:00
#SBATCH --mem-per-cpu 256
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
