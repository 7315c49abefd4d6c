#!/bin/bash

#SBATCH --exclusive=user
#SBATCH --comment="combo, with comma"
#SBATCH --dependency=after:{P4}+3
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --overcommit
## note: #SBATCH -n 999 is not a directive here
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
