#!/bin/bash
#SBATCH -i in-%j.txt
#SBATCH --mincpus 8
#SBATCH --part debug
#PBS -N pbsjob
#SBATCH -qhigh
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
