#!/bin/bash
#SBATCH --mem-per-cpu 2048K
## note: #SBATCH -n 999 is not a directive here
#SBATCH -dafterok:{P5}_2
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
