#!/bin/bash
#SBATCH --account=bio
#SBATCH --reservation=nosuchresv
#SBATCH -N 1-1

#SBATCH --mincpus=8
#SBATCH --gpus-per-task=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
