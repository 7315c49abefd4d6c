#!/bin/bash
#SBATCH
#SBATCH -J afterempty
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
