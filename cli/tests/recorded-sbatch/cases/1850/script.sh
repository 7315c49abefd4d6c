#!/bin/bash
#SBATCH --no-requeue
#SBATCH -d afterany:{P5}
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
