#!/bin/bash
#SBATCH -e e-%j.txt
#SBATCH --wckey=k1
#SBATCH -p batch,debug
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
