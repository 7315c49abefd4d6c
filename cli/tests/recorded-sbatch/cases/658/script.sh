#!/bin/bash
#SBATCH -J "two words"
#SBATCH --mem 2048K
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
