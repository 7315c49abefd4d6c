#!/bin/bash
#SBATCH -H
#SBATCH --wckey=k1
#SBATCH -p nosuch
#SBATCH -qhigh
#SBATCH --kill-on-invalid-dep=yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
