#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#SBATCH -D /tmp
#SBATCH --comment "random combo"
#SBATCH --gpus=1g.10gb:3
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
