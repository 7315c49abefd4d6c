#!/bin/bash
#SBATCH --gpus 1
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH -x n1
#SBATCH --error %x.err
#SBATCH --array 0-3,7
#SBATCH --gpus-per-task=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
