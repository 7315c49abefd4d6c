#!/bin/bash
#SBATCH --ntasks-per-node 2
#SBATCH --exclude n[3-4]
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
