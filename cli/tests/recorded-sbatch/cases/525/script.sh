#!/bin/bash
#SBATCH --error=%x.err
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH -b 2031-02-03
#SBATCH --dependency=after:{P4}+3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
