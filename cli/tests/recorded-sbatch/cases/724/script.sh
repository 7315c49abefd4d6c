#!/bin/bash
#SBATCH -N 1
#SBATCH -J combo
#SBATCH --error %x.err

#SBATCH -pnosuch
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
