#!/bin/bash
#SBATCH --export COMBO=1
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-cpu=256
#SBATCH --chdir rel
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
