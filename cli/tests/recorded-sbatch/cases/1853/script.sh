#!/bin/bash
#SBATCH -w n3,n4
#SBATCH -a0-15:4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
