#!/bin/bash
#SBATCH -a"1,3,5"
#SBATCH -H
#SBATCH --nice=5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
