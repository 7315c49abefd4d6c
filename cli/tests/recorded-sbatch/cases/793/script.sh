#!/bin/bash
#SBATCH --mem 2048K
#SBATCH --nice=-3
#SBATCH -D/tmp
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
