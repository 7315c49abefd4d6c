#!/bin/bash
#SBATCH --reservation=nosuchresv

#SBATCH --signal=B:TERM
#SBATCH -e e-%j.txt
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
