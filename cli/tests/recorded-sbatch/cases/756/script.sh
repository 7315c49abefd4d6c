#!/bin/bash
#SBATCH --mem-per-cpu 2048K
#SBATCH --nice=0
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
