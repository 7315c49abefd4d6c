#!/bin/bash
#SBATCH -c 64


#SBATCH --output o-%j.out
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
