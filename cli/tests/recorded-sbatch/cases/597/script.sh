#!/bin/bash
#SBATCH --error %x.err
#SBATCH -H
## note: #SBATCH -n 999 is not a directive here
## note: #SBATCH -n 999 is not a directive here
#SBATCH --array=0-99%5
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
