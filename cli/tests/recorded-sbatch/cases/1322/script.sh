#!/bin/bash
#SBATCH --no-requeue
#SBATCH --mail-type=END
# SBATCH --mem=1T (not a directive: space)
#SBATCH -p batch
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
