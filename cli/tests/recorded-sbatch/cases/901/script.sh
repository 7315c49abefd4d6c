#!/bin/bash
## note: #SBATCH -n 999 is not a directive here
#SBATCH --mem-per-cpu=2048K
#SBATCH -c 64
#SBATCH --nice 5

#SBATCH --comment "it's # here"
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
