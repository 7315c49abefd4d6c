#!/bin/bash
#SBATCH --comment="combo, with comma"
#SBATCH --exclusive
## note: #SBATCH -n 999 is not a directive here
#SBATCH --chdir=/scratch/oracle
#SBATCH --mem-per-cpu=256

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
