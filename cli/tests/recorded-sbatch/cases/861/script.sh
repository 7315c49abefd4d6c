#!/bin/bash
#SBATCH -x n1


#SBATCH -a 1,3,5
#SBATCH --no-requeue
#SBATCH --cpus-per-gpu=4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
