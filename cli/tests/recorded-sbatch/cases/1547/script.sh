#!/bin/bash
#SBATCH -t INFINITE
#SBATCH --ntasks-per-node=4
#SBATCH --qos normal
#SBATCH --ntasks-per-core=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
