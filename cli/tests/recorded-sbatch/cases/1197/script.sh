#!/bin/bash

# SBATCH --mem=1T (not a directive: space)
#SBATCH --mem-per-gpu=1024
#BSUB -q debug
## note: #SBATCH -n 999 is not a directive here
#SBATCH -J combo
#SBATCH --reservation nosuchresv
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
