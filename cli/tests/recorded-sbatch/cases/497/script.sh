#!/bin/bash

#SBATCH -e e-%j.txt
#SBATCH -t 1-0
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
