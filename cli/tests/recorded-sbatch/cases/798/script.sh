#!/bin/bash
#SBATCH --no-requeue
#SBATCH --exclusive=user
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
