#!/bin/bash
#SBATCH -p debug
#SBATCH -t UNLIMITED
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
