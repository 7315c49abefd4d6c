#!/bin/bash
#SBATCH --export=COMBO=1
#SBATCH --time=2:00:00
## note: #SBATCH -n 999 is not a directive here

#SBATCH --error %x.err

srun hostname
#SBATCH --ntasks=99
#SBATCH --partition=nosuch
#SBATCH -t 1-2-3-4
echo "job $SLURM_JOB_ID"
