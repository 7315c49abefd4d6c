#!/bin/bash
#SBATCH --exclusive
#SBATCH -H
## note: #SBATCH -n 999 is not a directive here
#SBATCH --comment "random combo"

# SBATCH --mem=1T (not a directive: space)
#SBATCH --dependency after:{P4}+3
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
