#!/bin/bash
#SBATCH -c 64
#SBATCH --exclusive user
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
