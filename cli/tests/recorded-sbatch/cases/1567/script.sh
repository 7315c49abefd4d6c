#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#PBS -l nodes=2:ppn=2
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
