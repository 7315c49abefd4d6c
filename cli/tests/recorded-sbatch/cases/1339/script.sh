#!/bin/bash
#SBATCH --export NONE
#SBATCH --kill-on-invalid-dep=yes
## note: #SBATCH -n 999 is not a directive here
#SBATCH -e e-%j.txt

module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
