#!/bin/bash
#SBATCH -n 2
#SBATCH
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
