#!/bin/bash
#SBATCH -t 20 # twenty minutes
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
