#!/bin/bash
#SBATCH --cpus-per-task 8
#SBATCH --ntasks-per-core=1
## note: #SBATCH -n 999 is not a directive here
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
