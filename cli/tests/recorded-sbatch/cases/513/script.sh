#!/bin/bash
#SBATCH --time-min 10
#SBATCH --dependency=afterany:{P1}:{P3}
## note: #SBATCH -n 999 is not a directive here

#SBATCH -p batch
#SBATCH --nodes 1-2
# SBATCH --mem=1T (not a directive: space)
#SBATCH --exclusive user
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
