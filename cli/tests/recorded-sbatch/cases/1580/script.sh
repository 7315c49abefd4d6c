#!/bin/bash
#SBATCH -p "debug,batch"
#SBATCH --ntasks 16

#SBATCH -x n1
#SBATCH --exclusive
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
