#!/bin/bash

#SBATCH --dependency=after:{P4}+3
#SBATCH --open-mode=append
## note: #SBATCH -n 999 is not a directive here
srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
