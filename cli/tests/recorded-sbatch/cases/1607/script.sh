#!/bin/bash
#SBATCH --chdir=rel
## note: #SBATCH -n 999 is not a directive here
#SBATCH -N3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
