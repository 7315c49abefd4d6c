#!/bin/bash

#SBATCH -n 1
#SBATCH --wckey=k1
#SBATCH -D /tmp
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
