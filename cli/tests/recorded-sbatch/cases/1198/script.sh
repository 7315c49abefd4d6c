#!/bin/bash
#SBATCH --no-requeue
#SBATCH --error=%x.err
#SBATCH --mincpus=8
#SBATCH --array=0-99%5
#SBATCH -H
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
