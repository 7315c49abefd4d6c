#!/bin/bash

#SBATCH --ntasks 2
#SBATCH --nice=5
#SBATCH -J "two words"

#SBATCH --gpus 1
#SBATCH -c 2
#SBATCH -e e-%j.txt
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
