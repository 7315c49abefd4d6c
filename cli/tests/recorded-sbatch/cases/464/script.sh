#!/bin/bash
#SBATCH -n 2
echo "job $SLURM_JOB_ID on $(hostname)"
#SBATCH -n 9
sleep 1
