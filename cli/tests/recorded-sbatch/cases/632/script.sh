#!/bin/bash
#SBATCH --ntasks-per-node 2
#SBATCH -G a100:5
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
