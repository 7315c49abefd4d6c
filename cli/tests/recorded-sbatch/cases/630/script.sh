#!/bin/bash
#SBATCH --time-min 10
#SBATCH -D /tmp

#SBATCH --gpus=1
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
