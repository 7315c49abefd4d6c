#!/bin/bash
#SBATCH -e e-%j.txt
#SBATCH -c 2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
