#!/bin/bash
#SBATCH --export ALL,A=1,B=2
#SBATCH -D /tmp
#SBATCH --mincpus=8
#SBATCH -pnosuch
#SBATCH --qos=normal
module load foo
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
