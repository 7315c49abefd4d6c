#!/bin/bash
#SBATCH --nice -3
#SBATCH --cpus-per-task=8
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
