#!/bin/bash
#SBATCH -J ok
#SBATCH --frobnicate
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
