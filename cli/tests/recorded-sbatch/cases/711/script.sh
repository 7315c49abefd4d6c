#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
# SBATCH --mem=1T (not a directive: space)
#SBATCH --wckey=k1
#SBATCH --begin 2030-06-01T12:00:00
#SBATCH -d afterok:{P5}_2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
