#!/bin/bash
#SBATCH --mem 4G
#SBATCH --ntasks-per-node 1
#SBATCH --reservation=nosuchresv
# SBATCH --mem=1T (not a directive: space)
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
