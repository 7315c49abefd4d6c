#!/bin/bash
#SBATCH --ntasks-per-node 4
# SBATCH --mem=1T (not a directive: space)
#SBATCH --dependency=afterany:{P1}:{P3}
## note: #SBATCH -n 999 is not a directive here
#SBATCH -a "1,3,5"
#SBATCH --export ALL
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
