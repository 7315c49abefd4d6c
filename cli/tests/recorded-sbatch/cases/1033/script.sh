#!/bin/bash
#PBS -j oe
#SBATCH --array=0-99%5
#SBATCH --gpus-per-node=2
#SBATCH -A physics
#SBATCH -D /tmp
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
