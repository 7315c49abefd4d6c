#!/bin/bash
#SBATCH --export NONE
#SBATCH --time=2:00:00
#SBATCH --time-min=10
#SBATCH -p "debug,batch"
#SBATCH --dependency=after:{P4}+3
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
