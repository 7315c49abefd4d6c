#!/bin/bash
#SBATCH --exclusive
# SBATCH --mem=1T (not a directive: space)
#SBATCH --error=%x.err
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --nice -3
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
