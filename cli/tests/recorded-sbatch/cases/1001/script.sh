#!/bin/bash
## note: #SBATCH -n 999 is not a directive here

#SBATCH --cpus-per-task=8
#SBATCH --time=2:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
