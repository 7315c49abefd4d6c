#!/bin/bash
#SBATCH -a "1,3,5"
#SBATCH --mem=2048K

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
