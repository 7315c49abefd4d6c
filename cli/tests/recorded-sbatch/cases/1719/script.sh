#!/bin/bash
#SBATCH --array 0-15
## note: #SBATCH -n 999 is not a directive here
#SBATCH --gres gpu:1g.10gb:2

#SBATCH -N 1-1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
