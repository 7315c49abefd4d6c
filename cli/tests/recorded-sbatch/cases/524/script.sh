#!/bin/bash
#SBATCH --export COMBO=1
#SBATCH -Jcombo
## note: #SBATCH -n 999 is not a directive here
#SBATCH --error=%x.err
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
