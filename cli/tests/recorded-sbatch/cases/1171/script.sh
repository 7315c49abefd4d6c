#!/bin/bash
#SBATCH --ntasks-per-node=2
#SBATCH --output=%x-%j.log
#SBATCH --kill-on-invalid-dep yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
