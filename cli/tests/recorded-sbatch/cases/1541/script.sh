#!/bin/bash
#SBATCH --wckey=k1
#SBATCH --kill-on-invalid-dep=yes
#SBATCH --oversubscribe
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
