#!/bin/bash

#SBATCH --nice=-3
#SBATCH --chdir /scratch/oracle
#SBATCH -t30:15
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
