#!/bin/bash
# SBATCH --mem=1T (not a directive: space)
#PBS -l nodes=2:ppn=2
#SBATCH -s
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
