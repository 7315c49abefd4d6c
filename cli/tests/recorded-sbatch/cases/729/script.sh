#!/bin/bash
#SBATCH -t 150
#SBATCH -o%A_%a.out
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
