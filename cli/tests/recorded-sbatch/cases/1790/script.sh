#!/bin/bash
#SBATCH --cpus-per-gpu 2
#SBATCH --mem-per-cpu=2048K
#SBATCH -H
## note: #SBATCH -n 999 is not a directive here
#SBATCH --export NONE
#SBATCH --open-mode append

#SBATCH --mail-type=END
#SBATCH -w "n3,n4"
set -euo pipefail
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
