#!/bin/bash
#SBATCH -p "batch,debug"
#SBATCH --cpus-per-gpu 2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
