#!/bin/bash
#SBATCH --open-mode=append
# SBATCH --mem=1T (not a directive: space)
#SBATCH --mincpus=8
#SBATCH --array 0-3,7
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
