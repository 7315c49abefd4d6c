#!/bin/bash
#SBATCH --kill-on-invalid-dep=yes
#SBATCH --no-requeue
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
