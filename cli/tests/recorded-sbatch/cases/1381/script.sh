#!/bin/bash
#SBATCH --tim 15
#SBATCH --signal=USR1@60

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
