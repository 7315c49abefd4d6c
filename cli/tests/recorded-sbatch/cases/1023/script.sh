#!/bin/bash
#SBATCH --mincpus=8

#SBATCH -N 1-1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
