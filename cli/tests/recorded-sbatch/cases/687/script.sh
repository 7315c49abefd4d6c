#!/bin/bash
#SBATCH -d aftercorr:{P5}
#SBATCH -wn3,n4
#SBATCH -Jcombo
#SBATCH -D /tmp
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
