#!/bin/bash
#SBATCH --nodes=1-3
## note: #SBATCH -n 999 is not a directive here
#SBATCH --deadline 2031-01-01T00:00:00
#SBATCH -Aphysics
#SBATCH -wn1
#SBATCH --exclusive=user
#SBATCH --mem-per-cpu=256
#SBATCH -d afterok:{P5}_2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
