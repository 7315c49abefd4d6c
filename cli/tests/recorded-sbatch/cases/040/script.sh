#!/bin/bash
#SBATCH -N 2 -n 4 -t 10
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
