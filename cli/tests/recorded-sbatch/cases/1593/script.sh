#!/bin/bash
#SBATCH --gpus-per-node 2

## note: #SBATCH -n 999 is not a directive here
#SBATCH --error %x.err
#SBATCH --exclusive
#SBATCH -a1,3,5
#SBATCH --qos normal
#SBATCH --ntasks-per-node 4
# SBATCH --mem=1T (not a directive: space)
#SBATCH -O
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
