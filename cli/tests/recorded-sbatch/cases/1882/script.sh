#!/bin/bash
#SBATCH --mem=16g
#SBATCH --mem-per-cpu=2048K
#SBATCH --time-min=1:00:00
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
