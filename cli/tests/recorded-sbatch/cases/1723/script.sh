#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mincpus 8
#SBATCH -i in-%j.txt
#SBATCH --exclusive
## note: #SBATCH -n 999 is not a directive here
#SBATCH --begin=2030-06-01T12:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
