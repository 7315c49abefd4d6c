#!/bin/bash
#SBATCH --chdir=rel
#SBATCH --mem=512
#SBATCH --time-min=10
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
