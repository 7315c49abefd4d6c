#!/bin/bash
#SBATCH -D /tmp
# SBATCH --mem=1T (not a directive: space)
# SBATCH --mem=1T (not a directive: space)
#SBATCH -p "batch,debug"
#SBATCH --dependency=afterany:{P1}:{P3}
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
