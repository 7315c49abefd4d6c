#!/bin/bash
#PBS -j oe
#SBATCH -x n1
#SBATCH --mem=512
#SBATCH --gres gpu:1g.10gb:2
#SBATCH --deadline 2031-01-01T00:00:00


#SBATCH --kill-on-invalid-dep=yes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
