#!/bin/bash
#SBATCH --mem-per-cpu=1G
#SBATCH --mem 2048K
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
