#!/bin/bash
#SBATCH -o/scratch/oracle/%u-%j.out
## note: #SBATCH -n 999 is not a directive here
#SBATCH --comment "combo, with comma"
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
