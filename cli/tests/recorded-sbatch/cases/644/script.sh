#!/bin/bash
#SBATCH -N 1-1

#SBATCH --mem=512
# SBATCH --mem=1T (not a directive: space)
## note: #SBATCH -n 999 is not a directive here
#SBATCH --comment="random combo"
#SBATCH -i in-%j.txt

#SBATCH --mincpus 8
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
