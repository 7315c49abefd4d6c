#!/bin/bash
#SBATCH --dependency=singleton
#SBATCH --mem-per-cpu 2048K
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
