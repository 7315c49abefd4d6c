#!/bin/bash
#SBATCH --array 0-15
#SBATCH --ntasks 16
#SBATCH --mem=2048K
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
