#!/bin/bash -l
#SBATCH -J login
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
