#!/bin/bash
#SBATCH --comment="combo, with comma"
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --kill-on-invalid-dep yes
#SBATCH --mail-user=a@b.c
#SBATCH --mem-per-cpu=1G

## note: #SBATCH -n 999 is not a directive here
#SBATCH --export=ALL
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
